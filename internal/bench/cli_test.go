package bench

import (
	"io"
	"strings"
	"testing"
)

// TestTurnLogFlags checks the line log of every gateway a run starts, from the command line to
// the gateway's environment, without starting any: on by default, as in the gateway; off with
// -turn-log=false; and with -turn-log-ab off in coachgw (and the gateways configured like it)
// and on in coachgw+log whatever -turn-log says, so that the pair differs in the log alone.
func TestTurnLogFlags(t *testing.T) {
	tests := []struct {
		args            []string
		turnLog, logAB  bool
		recordedTurnLog bool
		// want is COACH_RESUME_TTL and COACH_SAFETY_MODE of each gateway mode the run measures.
		want map[Mode]string
	}{
		{nil, true, false, true, map[Mode]string{Coachgw: "5m enforce"}},
		{[]string{"-quick"}, true, false, true, map[Mode]string{Coachgw: "5m enforce"}},
		{[]string{"-turn-log"}, true, false, true, map[Mode]string{Coachgw: "5m enforce"}},
		{[]string{"-turn-log=false"}, false, false, false, map[Mode]string{Coachgw: "0 enforce"}},
		{[]string{"-turn-log-ab"}, true, true, false, map[Mode]string{Coachgw: "0 enforce", CoachgwLog: "5m enforce"}},
		{[]string{"-turn-log=false", "-turn-log-ab"}, false, true, false, map[Mode]string{Coachgw: "0 enforce", CoachgwLog: "5m enforce"}},
		{[]string{"-turn-log-ab", "-safety-mode", "off"}, true, true, false, map[Mode]string{Coachgw: "0 off", CoachgwLog: "5m off"}},
		{[]string{"-safety-ab"}, true, false, true, map[Mode]string{Coachgw: "5m enforce", CoachgwSafetyOff: "5m off"}},
		{[]string{"-turn-log-ab", "-safety-ab", "-baseline-bin", "/tmp/base/coachbench"}, true, true, false,
			map[Mode]string{Coachgw: "0 enforce", CoachgwLog: "5m enforce", CoachgwSafetyOff: "0 off", CoachgwBaseline: "0 enforce"}},
		{[]string{"-safety-mode", "off", "-baseline-bin", "/tmp/base/coachbench"}, true, false, true,
			map[Mode]string{Coachgw: "5m off", CoachgwBaseline: "5m off"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(append([]string{"coachbench"}, tt.args...), " "), func(t *testing.T) {
			o, err := parseArgs(tt.args, func(string) string { return "" }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if o.cfg.TurnLog != tt.turnLog || o.cfg.TurnLogAB != tt.logAB {
				t.Errorf("TurnLog %v, TurnLogAB %v; want %v, %v", o.cfg.TurnLog, o.cfg.TurnLogAB, tt.turnLog, tt.logAB)
			}
			if got := o.cfg.turnLog(); got != tt.recordedTurnLog {
				t.Errorf("the Result records the log as %v, want %v", got, tt.recordedTurnLog)
			}
			r := &runner{cfg: o.cfg, up: &upstream{base: "http://127.0.0.1:9"}}
			var gateways int
			for _, m := range r.modes() {
				if !m.gateway() {
					continue
				}
				gateways++
				want, ok := tt.want[m]
				if !ok {
					t.Errorf("the run measures %s, which the test does not expect", m)
					continue
				}
				env, err := r.gatewayEnv(m)
				if err != nil {
					t.Fatal(err)
				}
				if got := envValue(env, "COACH_RESUME_TTL") + " " + envValue(env, "COACH_SAFETY_MODE"); got != want {
					t.Errorf("%s: COACH_RESUME_TTL and COACH_SAFETY_MODE %q, want %q", m, got, want)
				}
			}
			if gateways != len(tt.want) {
				t.Errorf("the run measures %d gateways, want %d", gateways, len(tt.want))
			}
		})
	}
}

// envValue returns the last value of key in env, as the child process would see it.
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
