package reliability_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/app"
	"github.com/coachgw/coachgw/internal/config"
)

// gatewayEnv, set in the environment of a child process running this test binary, makes it
// serve a gateway configured by the usual environment variables instead of running the tests,
// until SIGTERM or SIGKILL: a gateway process of its own, which a test can kill -9 without
// building the binary.
const gatewayEnv = "COACHGW_TEST_GATEWAY"

func TestMain(m *testing.M) {
	if os.Getenv(gatewayEnv) != "" {
		if err := serveGateway(); err != nil {
			fmt.Fprintln(os.Stderr, "gateway:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveGateway serves a gateway as cmd/coachgw does, its log on stderr.
func serveGateway() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return err
	}
	a, err := app.New(ctx, cfg, zerolog.New(os.Stderr).With().Timestamp().Logger())
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	return a.Serve(ctx, ln)
}
