package main

import (
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate/internal/chaos"
	"github.com/spate-dev/spate/internal/client/openai"
)

func init() { commands = append(commands, newChaosCmd) }

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
	seed                         int64
}

func newChaosProxyCmd() *cobra.Command {
	var f chaosProxyFlags
	c := &cobra.Command{
		Use:   "proxy --upstream URL [--listen ADDR] [--chaos FAULTS]... [--faults FILE.json]",
		Short: "Run a fault-injecting reverse proxy in front of a service",
		Long: `Run a reverse proxy in front of --upstream that injects faults: added latency
(fixed, uniform or lognormal), error responses (500/502/503/504, 429 with
retry-after and x-ratelimit-* headers), connection resets, black-holes,
bandwidth limits, and SSE stalls, truncations and slow drips. Responses stream
through unbuffered.

Each --chaos is one rule: comma-separated key=value with the JSON names of
/admin/faults, and an optional window (from, until) measured from the moment
the rule set is applied. While it runs, PUT /admin/faults (JSON) replaces the
set, DELETE clears it, GET shows it; GET /admin/stats counts injected faults.
It listens on loopback unless --listen says otherwise. Ctrl-C stops it.`,
		Example: `  spate chaos proxy --upstream http://127.0.0.1:8000 --listen 127.0.0.1:9000 \
    --chaos 'error_rate=0.05,latency=lognormal:3.2:0.5' \
    --chaos 'from=30s,until=45s,blackhole_rate=1'
  curl -X PUT 127.0.0.1:9000/admin/faults -d '{"stall_rate":0.1,"stall_duration":"2s"}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runChaosProxy(cmd, f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:9000", "address to listen on (loopback by default)")
	fl.StringVar(&f.upstream, "upstream", "", "service to forward to, scheme://host:port (required); a path is put before every request's")
	fl.StringArrayVar(&f.rules, "chaos", nil, "fault rule, e.g. 'error_rate=0.1,latency=lognormal:3.2:0.5,from=10s,until=20s' (repeatable)")
	fl.StringVar(&f.faultsFile, "faults", "", "JSON file with a fault set, as PUT to /admin/faults")
	fl.Int64Var(&f.seed, "seed", 1, "seed of the per-request fault draws")
	return c
}

// chaosSet builds a fault set from a JSON file and --chaos rules.
func chaosSet(file string, rules []string, seed int64) (chaos.Set, error) {
	var set chaos.Set
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return set, &exitErr{code: exitError, err: fmt.Errorf("reading --faults file: %w", err)}
		}
		if set, err = chaos.DecodeSet(b); err != nil {
			return set, usageErr("--faults %s: %v", file, err)
		}
	}
	for _, r := range rules {
		rule, err := chaos.ParseRule(r)
		if err != nil {
			return set, usageErr("--chaos: %v", err)
		}
		set.Schedule = append(set.Schedule, rule)
	}
	if set.Seed == 0 {
		set.Seed = seed
	}
	return set, nil
}

func runChaosProxy(cmd *cobra.Command, f chaosProxyFlags) error {
	if f.upstream == "" {
		return usageErr("--upstream is required, e.g. --upstream http://127.0.0.1:8000")
	}
	set, err := chaosSet(f.faultsFile, f.rules, f.seed)
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
	var desc []string
	for _, r := range set.Rules() {
		b, _ := r.MarshalJSONString()
		desc = append(desc, b)
	}
	faults := "no faults"
	if len(desc) > 0 {
		faults = strings.Join(desc, " ")
	}
	fmt.Fprintf(cmd.OutOrStdout(), "spate chaos proxy: http://%s → %s (%s)\n", ln.Addr(), openai.Redact(f.upstream), faults)
	fmt.Fprintf(cmd.OutOrStdout(), "admin: PUT/GET/DELETE http://%s/admin/faults, GET http://%s/admin/stats; Ctrl-C stops\n", ln.Addr(), ln.Addr())
	if err := chaos.Serve(cmd.Context(), ln, p); err != nil {
		return fmt.Errorf("chaos proxy: %w", err)
	}
	st := p.Stats()
	fmt.Fprintf(cmd.OutOrStdout(), "stopped: %d requests, %d forwarded, %d failing faults injected\n", st.Requests, st.Forwarded, st.Failing)
	return nil
}
