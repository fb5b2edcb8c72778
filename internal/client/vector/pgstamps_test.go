package vector_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/client/vector"
)

// fakePG is a PostgreSQL server of the extended protocol's few messages a
// pgvector search sends (no TLS, no password): every query answers the
// rows ids, after delay; wrote gets the times around each answer's write.
type fakePG struct {
	ln    net.Listener
	ids   []int64
	delay time.Duration
	wrote chan [2]time.Time
}

func newFakePG(t *testing.T, ids []int64, delay time.Duration) *fakePG {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakePG{ln: ln, ids: ids, delay: delay, wrote: make(chan [2]time.Time, 16)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(t, c)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return f
}

func (f *fakePG) dsn() string {
	return "postgres://spate@" + f.ln.Addr().String() + "/spate?sslmode=disable"
}

func (f *fakePG) serve(t *testing.T, c net.Conn) {
	defer c.Close()
	b := pgproto3.NewBackend(c, c)
	if _, err := b.ReceiveStartupMessage(); err != nil {
		return
	}
	b.Send(&pgproto3.AuthenticationOk{})
	b.Send(&pgproto3.ParameterStatus{Name: "server_version", Value: "17.0"})
	b.Send(&pgproto3.BackendKeyData{ProcessID: 1, SecretKey: []byte{0, 0, 0, 1}})
	b.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if err := b.Flush(); err != nil {
		return
	}
	id := pgproto3.FieldDescription{Name: []byte("id"), DataTypeOID: 20, DataTypeSize: 8, TypeModifier: -1}
	// Statements by name (pgx uses the unnamed one), the bound one, and
	// whether a search ran since the last Sync.
	stmts := map[string]string{}
	bound := ""
	binaryIDs, executed := false, false
	isSet := func(q string) bool { return len(q) >= 3 && q[:3] == "SET" }
	for {
		m, err := b.Receive()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, net.ErrClosed) {
				t.Logf("fake postgres: %v", err)
			}
			return
		}
		switch m := m.(type) {
		case *pgproto3.Parse:
			stmts[m.Name] = m.Query
			b.Send(&pgproto3.ParseComplete{})
		case *pgproto3.Describe:
			q := bound
			if m.ObjectType == 'S' {
				q = stmts[m.Name]
				if isSet(q) {
					b.Send(&pgproto3.ParameterDescription{})
				} else {
					b.Send(&pgproto3.ParameterDescription{ParameterOIDs: []uint32{25, 20}})
				}
			}
			if isSet(q) {
				b.Send(&pgproto3.NoData{})
			} else {
				fd := id
				if m.ObjectType == 'P' && binaryIDs {
					fd.Format = 1 // a portal's rows in the format its Bind asked
				}
				b.Send(&pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{fd}})
			}
		case *pgproto3.Bind:
			bound = stmts[m.PreparedStatement]
			binaryIDs = len(m.ResultFormatCodes) > 0 && m.ResultFormatCodes[0] == 1
			b.Send(&pgproto3.BindComplete{})
		case *pgproto3.Execute:
			if isSet(bound) {
				b.Send(&pgproto3.CommandComplete{CommandTag: []byte("SET")})
				continue
			}
			for _, v := range f.ids {
				val := []byte(fmt.Sprint(v))
				if binaryIDs {
					val = binary.BigEndian.AppendUint64(nil, uint64(v))
				}
				b.Send(&pgproto3.DataRow{Values: [][]byte{val}})
			}
			b.Send(&pgproto3.CommandComplete{CommandTag: []byte(fmt.Sprintf("SELECT %d", len(f.ids)))})
			executed = true
		case *pgproto3.Sync:
			b.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
			if !executed {
				if b.Flush() != nil {
					return
				}
				continue
			}
			executed = false
			time.Sleep(f.delay)
			w0 := time.Now()
			if b.Flush() != nil {
				return
			}
			f.wrote <- [2]time.Time{w0, time.Now()}
		case *pgproto3.Terminate:
			return
		default:
			t.Errorf("fake postgres: unexpected %T", m)
			return
		}
	}
}

// TestPgvectorProbeEndsAtItsLastRead: a pgvector search's latency ends
// when its answer's last bytes came, as an HTTP backend's does
// (TestProbeEndsAtItsLastRead): every read of the probe's connection is
// held 80 ms after its wake-up; the fake server answers 30 ms into each
// search. With the kernel's receive stamps the latency still ends within
// the server's write; without them it ends at the late read, and its
// range holds the write. Before pgvector's connections were stamped, a
// search's end was when the probe ran again, with no read lag and no
// bound (both fail here): a busy machine's lateness in reading it added
// to its latency unseen.
func TestPgvectorProbeEndsAtItsLastRead(t *testing.T) {
	if !rawhttp.Available() {
		t.Skip("reads are stamped on Linux only")
	}
	ctx := context.Background()
	ds, truth := stampsDataset(t)
	ids := make([]int64, 5)
	for i, v := range truth.IDs[0][:5] {
		ids[i] = int64(v)
	}
	for _, kernel := range []bool{true, false} {
		t.Run(fmt.Sprintf("kernel stamps %v", kernel), func(t *testing.T) {
			if !kernel {
				defer rawhttp.SetNoKernelStamps()()
			}
			f := newFakePG(t, ids, 30*time.Millisecond)
			idx, err := vector.OpenPgvector(ctx, f.dsn(), "spate_test", 1)
			if err != nil {
				t.Fatal(err)
			}
			defer idx.Close()
			probe, err := vector.NewProbe(idx, ds, truth, 5)
			if err != nil {
				t.Fatal(err)
			}
			if rec := searchOnce(t, probe); rec.Recall != 1 { // the statement described, unheld
				t.Fatalf("recall %v, want 1 (the fake answers the truth)", rec.Recall)
			}
			<-f.wrote
			restore := rawhttp.SetWakeStall(80 * time.Millisecond)
			rec := searchOnce(t, probe)
			restore()
			checkEndsAtLastRead(t, kernel, rec, <-f.wrote)
		})
	}
}
