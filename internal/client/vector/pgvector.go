package vector

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/scrub"
)

// Pgvector is a table of a PostgreSQL database with the pgvector
// extension, searched through an HNSW index over SQL. A search with an ef
// sends SET hnsw.ef_search with its SELECT, in one round trip.
type Pgvector struct {
	dsn, table string
	metric     Metric
	idle       chan *pgConn
	slots      chan struct{} // one per connection allowed open
	mu         sync.Mutex
	all        []*pgConn
}

type pgConn struct {
	c *pgx.Conn
	// sc is the connection's stamped TCP connection (nil when its reads
	// are not stamped: a Unix socket, or a system other than Linux).
	// It carries one query's answer at a time, as HTTP/1.1 does.
	sc *rawhttp.StampedConn
}

// DefaultPgConns is how many connections a Pgvector opens at most.
const DefaultPgConns = 16

// OpenPgvector connects to dsn (a postgres:// URL) and checks that it
// answers. table is the table to fill and search; maxConns bounds the open
// connections (0: DefaultPgConns), as a connection pool would.
func OpenPgvector(ctx context.Context, dsn, table string, maxConns int) (*Pgvector, error) {
	if !validIdent(table) {
		return nil, fmt.Errorf("pgvector table %q: use letters, digits and _ only", table)
	}
	if maxConns <= 0 {
		maxConns = DefaultPgConns
	}
	p := &Pgvector{dsn: dsn, table: table, metric: Cosine, idle: make(chan *pgConn, maxConns), slots: make(chan struct{}, maxConns)}
	c, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	p.put(c)
	return p, nil
}

func validIdent(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// Backend implements Index.
func (p *Pgvector) Backend() string { return "pgvector" }

// get returns an idle connection, or opens one when fewer than the
// maximum are open, or waits for one.
func (p *Pgvector) get(ctx context.Context) (*pgConn, error) {
	select {
	case c := <-p.idle:
		return c, nil
	default:
	}
	select {
	case c := <-p.idle:
		return c, nil
	case p.slots <- struct{}{}:
		cfg, err := pgx.ParseConfig(p.dsn)
		if err != nil {
			<-p.slots
			return nil, fmt.Errorf("pgvector target %s: %w", scrub.URL(p.dsn), err)
		}
		// Unnamed statements, described once per connection: no named
		// prepared statements, which poolers and single-backend servers
		// (PGlite) share between connections.
		cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
		// Reads stamped with the kernel's receive time, as the HTTP
		// backends' are (see stamps).
		cfg.DialFunc = pgconn.DialFunc(rawhttp.StampDial(rawhttp.Dialer(cfg.DialFunc)))
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			<-p.slots
			return nil, fmt.Errorf("connecting to pgvector at %s: %w", scrub.URL(p.dsn), err)
		}
		pc := &pgConn{c: c, sc: rawhttp.Stamped(c.PgConn().Conn())}
		p.mu.Lock()
		p.all = append(p.all, pc)
		p.mu.Unlock()
		return pc, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *Pgvector) put(c *pgConn) { p.idle <- c }

// drop closes a connection that failed, freeing its slot.
func (p *Pgvector) drop(c *pgConn) {
	_ = c.c.Close(context.Background())
	p.mu.Lock()
	for i, x := range p.all {
		if x == c {
			p.all = append(p.all[:i], p.all[i+1:]...)
			break
		}
	}
	p.mu.Unlock()
	<-p.slots
}

// ops returns the distance operator and the index operator class of m.
func pgOps(m Metric) (op, class string) {
	switch m {
	case L2:
		return "<->", "vector_l2_ops"
	case Dot:
		return "<#>", "vector_ip_ops"
	}
	return "<=>", "vector_cosine_ops"
}

// pgBatch is how many rows one INSERT carries (COPY is avoided: some
// servers, PGlite among them, do not support it).
const pgBatch = 250

// Load implements Index: it recreates the table, inserts the vectors in
// batched INSERTs and builds an HNSW index.
func (p *Pgvector) Load(ctx context.Context, ds *Dataset, m Metric) error {
	c, err := p.get(ctx)
	if err != nil {
		return err
	}
	defer p.put(c)
	p.metric = m
	_, class := pgOps(m)
	stmts := []string{
		"CREATE EXTENSION IF NOT EXISTS vector",
		"DROP TABLE IF EXISTS " + p.table,
		fmt.Sprintf("CREATE TABLE %s (id integer PRIMARY KEY, embedding vector(%d) NOT NULL)", p.table, ds.Dim),
	}
	for _, s := range stmts {
		if _, err := c.c.Exec(ctx, s); err != nil {
			return fmt.Errorf("pgvector: %s: %w", s, err)
		}
	}
	var sql strings.Builder
	args := make([]any, 0, 2*pgBatch)
	for start := 0; start < len(ds.Vectors); start += pgBatch {
		end := min(start+pgBatch, len(ds.Vectors))
		sql.Reset()
		args = args[:0]
		sql.WriteString("INSERT INTO " + p.table + " (id, embedding) VALUES ")
		for i := start; i < end; i++ {
			if i > start {
				sql.WriteByte(',')
			}
			fmt.Fprintf(&sql, "($%d, $%d::vector)", len(args)+1, len(args)+2)
			args = append(args, i, VectorText(ds.Vectors[i]))
		}
		if _, err := c.c.Exec(ctx, sql.String(), args...); err != nil {
			return fmt.Errorf("pgvector: inserting rows %d-%d into %s: %w", start, end-1, p.table, err)
		}
	}
	idx := fmt.Sprintf("CREATE INDEX ON %s USING hnsw (embedding %s) WITH (m = 16, ef_construction = 64)", p.table, class)
	if _, err := c.c.Exec(ctx, idx); err != nil {
		return fmt.Errorf("pgvector: %s: %w", idx, err)
	}
	if _, err := c.c.Exec(ctx, "ANALYZE "+p.table); err != nil {
		return fmt.Errorf("pgvector: analyze %s: %w", p.table, err)
	}
	return nil
}

// UseMetric sets the metric of searches on a table loaded earlier (Load
// sets it too).
func (p *Pgvector) UseMetric(m Metric) { p.metric = m }

// Search implements Index.
func (p *Pgvector) Search(ctx context.Context, q []float32, k, ef int) ([]int64, error) {
	c, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	st, _ := ctx.Value(stampsKey{}).(*stamps)
	if st != nil {
		*st = stamps{sc: c.sc}
	}
	ids, err := p.search(ctx, c, q, k, ef)
	if st != nil && err == nil {
		st.read() // the answer is read whole: its last read is the connection's
	}
	if err != nil && c.c.IsClosed() {
		p.drop(c)
		return nil, err
	}
	p.put(c)
	return ids, err
}

func (p *Pgvector) search(ctx context.Context, c *pgConn, q []float32, k, ef int) ([]int64, error) {
	op, _ := pgOps(p.metric)
	order := "embedding " + op + " $1::vector"
	if ef == Exact {
		order = "(" + order + ") + 0" // an expression the index cannot serve: a full scan
	}
	sql := "SELECT id FROM " + p.table + " ORDER BY " + order + " LIMIT $2"
	var rows pgx.Rows
	var br pgx.BatchResults
	if ef > 0 {
		// SET and SELECT go together in one round trip, every query: the
		// setting holds even where connections share a session (PGlite,
		// poolers in transaction mode).
		var b pgx.Batch
		b.Queue("SET hnsw.ef_search = " + strconv.Itoa(ef))
		b.Queue(sql, VectorText(q), k)
		br = c.c.SendBatch(ctx, &b)
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, fmt.Errorf("pgvector: SET hnsw.ef_search = %d: %w", ef, err)
		}
		var err error
		if rows, err = br.Query(); err != nil {
			br.Close()
			return nil, fmt.Errorf("pgvector: search: %w", err)
		}
	} else {
		var err error
		if rows, err = c.c.Query(ctx, sql, VectorText(q), k); err != nil {
			return nil, fmt.Errorf("pgvector: search: %w", err)
		}
	}
	ids := make([]int64, 0, k)
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			if br != nil {
				br.Close()
			}
			return nil, fmt.Errorf("pgvector: reading search rows: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	err := rows.Err()
	if br != nil {
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return nil, fmt.Errorf("pgvector: search: %w", err)
	}
	return ids, nil
}

// Close implements Index.
func (p *Pgvector) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.all {
		_ = c.c.Close(context.Background())
	}
	p.all = nil
	return nil
}

// VectorText is pgvector's text form of v: [x1,x2,...].
func VectorText(v []float32) string {
	b := make([]byte, 0, len(v)*10+2)
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
	}
	return string(append(b, ']'))
}
