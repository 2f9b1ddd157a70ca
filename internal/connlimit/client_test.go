package connlimit

import "testing"

// TestClient checks what connections, and new sessions without API keys, are counted against:
// the peer's address, an IPv6 host's whole /64 (one host usually holds one, so rotating within
// it evades nothing), never the port.
func TestClient(t *testing.T) {
	tests := []struct{ remote, want string }{
		{"192.0.2.7:51234", "192.0.2.7"},
		{"192.0.2.7:1", "192.0.2.7"},
		{"[2001:db8:1:2:aaaa::1]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff:ffff:ffff:ffff]:443", "2001:db8:1:2::/64"},
		{"[::ffff:192.0.2.7]:80", "192.0.2.7"},
		{"[fe80::1%eth0]:80", "fe80::/64"},
		{"not an address", "not an address"},
	}
	for _, tt := range tests {
		t.Run(tt.remote, func(t *testing.T) {
			if got := Client(tt.remote); got != tt.want {
				t.Errorf("Client(%q) = %q, want %q", tt.remote, got, tt.want)
			}
		})
	}
}
