package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate/internal/chaos"
	"github.com/spate-dev/spate/internal/scrub"
)

func newChaosCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "chaos",
		Short: "Inject faults between spate and a service",
	}
	c.AddCommand(newChaosProxyCmd())
	return c
}

// chaosProxyFlags are the flags of spate chaos proxy.
type chaosProxyFlags struct {
	listen, upstream, faultsFile string
	rules                        []string
	seed                         uint64
}

func newChaosProxyCmd() *cobra.Command {
	var f chaosProxyFlags
	c := &cobra.Command{
		Use:     "proxy --upstream URL [--listen ADDR] [--chaos FAULTS]... [--faults FILE.json]",
		Short:   "Run a fault-injecting reverse proxy in front of a service",
		Long:    help("chaos-proxy"),
		Example: help("chaos-proxy.example"),
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runChaosProxy(cmd, f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:9000", "address to listen on (loopback by default)")
	fl.StringVar(&f.upstream, "upstream", "", "service to forward to, scheme://host:port (required); a path in it is put before every request's path")
	fl.StringArrayVar(&f.rules, "chaos", nil, "fault rule, e.g. 'error_rate=0.1,latency=lognormal:3.2:0.5,from=10s,until=20s' (repeatable)")
	fl.StringVar(&f.faultsFile, "faults", "", "JSON file with a fault set, as PUT to /admin/faults")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the per-request fault draws")
	return c
}

func runChaosProxy(cmd *cobra.Command, f chaosProxyFlags) error {
	if f.upstream == "" {
		return usageErr("--upstream is required, e.g. --upstream http://127.0.0.1:8000")
	}
	set, err := chaos.LoadSet(cmd.Context(), f.faultsFile, f.rules, int64(f.seed))
	var pe *fs.PathError
	if err != nil && !errors.As(err, &pe) {
		return usageErr("%v", err)
	}
	if err != nil {
		return err
	}
	p, err := chaos.New(f.upstream)
	if err != nil {
		return usageErr("--upstream: %v", err)
	}
	if err := p.Apply(set); err != nil {
		return usageErr("faults: %v", err)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("chaos proxy: listening on %s: %w (pass a free --listen address)", f.listen, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "spate chaos proxy: http://%s → %s (%s)\n", ln.Addr(), scrub.URL(f.upstream), set.Describe())
	fmt.Fprintf(cmd.OutOrStdout(), "admin: PUT/GET/DELETE http://%s/admin/faults, GET http://%s/admin/stats; Ctrl-C stops\n", ln.Addr(), ln.Addr())
	if err := chaos.Serve(cmd.Context(), ln, p); err != nil {
		return fmt.Errorf("chaos proxy: %w", err)
	}
	st := p.Stats()
	fmt.Fprintf(cmd.OutOrStdout(), "stopped: %d requests, %d forwarded, %d failing faults injected\n", st.Requests, st.Forwarded, st.Failing)
	return nil
}
