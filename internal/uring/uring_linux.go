//go:build linux

package uring

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Opcodes, entry flags and setup flags (include/uapi/linux/io_uring.h).
const (
	OpRecvMsg = 10 // IORING_OP_RECVMSG
	OpSend    = 26 // IORING_OP_SEND
	OpRecv    = 27 // IORING_OP_RECV

	FlagFixedFile    = 1 << 0 // IOSQE_FIXED_FILE
	FlagBufferSelect = 1 << 5 // IOSQE_BUFFER_SELECT

	// RecvMultishot in SQE.Ioprio keeps a receive armed: a completion per
	// arrival, each in a provided buffer, until one comes without CQEMore.
	RecvMultishot = 1 << 1

	SetupSubmitAll    = 1 << 7
	SetupCoopTaskrun  = 1 << 8
	SetupSingleIssuer = 1 << 12
	// SetupDeferTaskrun runs completion work only when the ring's thread
	// asks for completions (Wait), not on arrival.
	SetupDeferTaskrun = 1 << 13

	CQEBuffer      = 1 << 0 // IORING_CQE_F_BUFFER: CQE.Flags>>16 is the buffer id
	CQEMore        = 1 << 1 // IORING_CQE_F_MORE: the multishot request stays armed
	cqeBufferShift = 16

	setupCQSize      = 1 << 3
	enterGetEvents   = 1 << 0
	enterExtArg      = 1 << 3
	offSQRing        = 0
	offCQRing        = 0x8000000
	offSQEs          = 0x10000000
	regFiles         = 2
	regUpdateFiles   = 6
	registerProbe    = 8
	registerPbufRing = 22
	opSupported      = 1 << 0
)

// SQE is struct io_uring_sqe (64 bytes).
type SQE struct {
	Opcode   uint8
	Flags    uint8
	Ioprio   uint16
	Fd       int32
	Off      uint64
	Addr     uint64
	Len      uint32
	OpFlags  uint32 // msg_flags of sends and receives
	UserData uint64
	BufGroup uint16 // with FlagBufferSelect
	_        uint16
	_        uint32
	_        [2]uint64
}

// CQE is struct io_uring_cqe (16 bytes).
type CQE struct {
	UserData uint64
	Res      int32 // a result ≥ 0, or −errno
	Flags    uint32
}

// BufferID is the provided buffer a completion with CQEBuffer used.
func (c *CQE) BufferID() uint16 { return uint16(c.Flags >> cqeBufferShift) }

type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// params is struct io_uring_params.
type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqOffsets
	cqOff                                                                  cqOffsets
}

// Ring is one submission/completion ring pair.
type Ring struct {
	fd                     int
	sqRing, cqRing, sqeMem []byte
	sqHead, sqTail         *uint32
	sqMask                 uint32
	sqArray                []uint32
	sqes                   []SQE
	cqHead, cqTail         *uint32
	cqMask                 uint32
	cqes                   []CQE
	entries                uint32
}

// New sets up a ring of entries submission entries with setup flags
// (cqEntries, when not 0, sizes the completion ring), or reports why
// io_uring cannot be used here: kernel too old or a flag unknown to it
// (EINVAL), io_uring disabled by kernel.io_uring_disabled, or refused by a
// seccomp filter, as in many containers.
func New(entries, flags, cqEntries uint32) (*Ring, error) {
	p := params{flags: flags}
	if cqEntries > 0 {
		p.flags |= setupCQSize
		p.cqEntries = cqEntries
	}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r := &Ring{fd: int(fd), entries: p.sqEntries}
	if err := r.mmap(&p); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Ring) mmap(p *params) error {
	var err error
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(CQE{})))
	const prot, flags = unix.PROT_READ | unix.PROT_WRITE, unix.MAP_SHARED | unix.MAP_POPULATE
	if r.sqRing, err = unix.Mmap(r.fd, offSQRing, sqSize, prot, flags); err != nil {
		return fmt.Errorf("mapping the io_uring submission ring: %w", err)
	}
	if r.cqRing, err = unix.Mmap(r.fd, offCQRing, cqSize, prot, flags); err != nil {
		return fmt.Errorf("mapping the io_uring completion ring: %w", err)
	}
	if r.sqeMem, err = unix.Mmap(r.fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(SQE{})), prot, flags); err != nil {
		return fmt.Errorf("mapping the io_uring submission entries: %w", err)
	}
	r.sqHead = (*uint32)(unsafe.Pointer(&r.sqRing[p.sqOff.head]))
	r.sqTail = (*uint32)(unsafe.Pointer(&r.sqRing[p.sqOff.tail]))
	r.sqMask = *(*uint32)(unsafe.Pointer(&r.sqRing[p.sqOff.ringMask]))
	r.sqArray = unsafe.Slice((*uint32)(unsafe.Pointer(&r.sqRing[p.sqOff.array])), p.sqEntries)
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	r.cqHead = (*uint32)(unsafe.Pointer(&r.cqRing[p.cqOff.head]))
	r.cqTail = (*uint32)(unsafe.Pointer(&r.cqRing[p.cqOff.tail]))
	r.cqMask = *(*uint32)(unsafe.Pointer(&r.cqRing[p.cqOff.ringMask]))
	r.cqes = unsafe.Slice((*CQE)(unsafe.Pointer(&r.cqRing[p.cqOff.cqes])), p.cqEntries)
	return nil
}

// Entries is the number of submission entries.
func (r *Ring) Entries() uint32 { return r.entries }

// Supports reports whether the kernel knows opcode op.
func (r *Ring) Supports(op uint8) error {
	// struct io_uring_probe: last_op, ops_len, resv, resv2[3], then
	// ops_len × struct io_uring_probe_op {op, resv, flags u16, resv2 u32}.
	const nOps = 64
	var buf [16 + nOps*8]byte
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerProbe, uintptr(unsafe.Pointer(&buf[0])), nOps, 0, 0)
	if errno != 0 {
		return fmt.Errorf("io_uring probe: %w", errno)
	}
	e := buf[16+int(op)*8:]
	if lastOp := buf[0]; lastOp < op || *(*uint16)(unsafe.Pointer(&e[2]))&opSupported == 0 {
		return fmt.Errorf("io_uring: opcode %d not supported by this kernel", op)
	}
	return nil
}

// Close unmaps the ring and closes it; the kernel cancels what is still
// armed.
func (r *Ring) Close() {
	for _, m := range [][]byte{r.sqeMem, r.cqRing, r.sqRing} {
		if m != nil {
			_ = unix.Munmap(m)
		}
	}
	r.sqeMem, r.cqRing, r.sqRing = nil, nil, nil
	if r.fd >= 0 {
		_ = unix.Close(r.fd)
		r.fd = -1
	}
}

// SQTail is the submission ring's tail: entries from it on are free, up to
// Entries() − Pending().
func (r *Ring) SQTail() uint32 { return atomic.LoadUint32(r.sqTail) }

// SQHead is the submission ring's head: the kernel has taken the entries
// before it.
func (r *Ring) SQHead() uint32 { return atomic.LoadUint32(r.sqHead) }

// SQE is the submission entry at position tail (from SQTail on), set up to
// be submitted once SetSQTail moves the tail past it.
func (r *Ring) SQE(tail uint32) *SQE {
	idx := tail & r.sqMask
	r.sqArray[idx] = idx
	return &r.sqes[idx]
}

// SetSQTail publishes the entries before tail to the kernel (or withdraws
// those the kernel has not taken, when tail is SQHead()).
func (r *Ring) SetSQTail(tail uint32) { atomic.StoreUint32(r.sqTail, tail) }

// Pending is the number of submission entries the kernel has not taken.
func (r *Ring) Pending() uint32 { return r.SQTail() - r.SQHead() }

// Push queues one entry; it reports false when the ring is full.
func (r *Ring) Push(e SQE) bool {
	if r.Pending() >= r.entries {
		return false
	}
	t := r.SQTail()
	*r.SQE(t) = e
	r.SetSQTail(t + 1)
	return true
}

// Submit submits what is pending without waiting, as a raw system call
// (it does not block: the runtime need not know), and returns how many
// entries the kernel took.
func (r *Ring) Submit() (int, error) {
	for {
		n, _, errno := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(r.Pending()), 0, 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return int(n), errno
		}
		return int(n), nil
	}
}

// getEventsArg is struct io_uring_getevents_arg.
type getEventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	minWait   uint32
	ts        uint64
}

// Wait submits what is pending and waits until minComplete completions
// are in the ring, or timeout has passed (timeout ≤ 0: no limit). It is a
// blocking system call the runtime knows of. A timeout or an interrupted
// wait is not an error.
func (r *Ring) Wait(minComplete uint32, timeout time.Duration) error {
	var arg getEventsArg
	ts := unix.NsecToTimespec(int64(timeout))
	flags := uintptr(enterGetEvents)
	var argp, argsz uintptr
	if timeout > 0 {
		arg.ts = uint64(uintptr(unsafe.Pointer(&ts)))
		flags |= enterExtArg
		argp, argsz = uintptr(unsafe.Pointer(&arg)), unsafe.Sizeof(arg)
	}
	_, _, errno := syscall.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(r.Pending()), uintptr(minComplete), flags, argp, argsz)
	runtime.KeepAlive(&ts)
	runtime.KeepAlive(&arg)
	switch errno {
	case 0, unix.ETIME, unix.EINTR:
		return nil
	}
	return fmt.Errorf("io_uring_enter: %w", errno)
}

// Reap hands each completion in the ring to fn, in order, frees them and
// returns their number.
func (r *Ring) Reap(fn func(*CQE)) int {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	n := 0
	for ; head != tail; head++ {
		fn(&r.cqes[head&r.cqMask])
		n++
	}
	atomic.StoreUint32(r.cqHead, head)
	return n
}

// registerFiles registers a sparse table of n files, all empty, to be set
// with updateFile.
func (r *Ring) registerFiles(n int) error {
	fds := make([]int32, n)
	for i := range fds {
		fds[i] = -1
	}
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), regFiles, uintptr(unsafe.Pointer(&fds[0])), uintptr(n), 0, 0)
	if errno != 0 {
		return fmt.Errorf("io_uring register files: %w", errno)
	}
	return nil
}

// filesUpdate is struct io_uring_files_update.
type filesUpdate struct {
	offset uint32
	resv   uint32
	fds    uint64
}

// updateFile sets slot of the registered table to fd (−1: empty).
func (r *Ring) updateFile(slot int, fd int32) error {
	fds := [1]int32{fd}
	up := filesUpdate{offset: uint32(slot), fds: uint64(uintptr(unsafe.Pointer(&fds[0])))}
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), regUpdateFiles, uintptr(unsafe.Pointer(&up)), 1, 0, 0)
	runtime.KeepAlive(&fds)
	if errno != 0 {
		return fmt.Errorf("io_uring files update: %w", errno)
	}
	return nil
}

// BufRing is a ring of provided buffers (IORING_REGISTER_PBUF_RING): the
// kernel picks one for each completion of a receive with FlagBufferSelect
// in its group, and the owner gives it back with Recycle and Publish once
// it has read it.
type BufRing struct {
	ring  []byte // n × struct io_uring_buf {addr u64, len u32, bid u16, resv u16}; the tail overlays entry 0's resv
	bufs  []byte
	size  int
	n     uint16
	tail  uint16
	group uint16
}

// bufReg is struct io_uring_buf_reg.
type bufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	resv        [3]uint64
}

// NewBufRing registers n buffers (a power of two) of size bytes as group,
// all of them given to the kernel.
func (r *Ring) NewBufRing(group uint16, n uint16, size int) (*BufRing, error) {
	if n == 0 || n&(n-1) != 0 {
		return nil, errors.New("uring: buffer count must be a power of two")
	}
	mem, err := unix.Mmap(-1, 0, int(n)*16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mapping an io_uring buffer ring: %w", err)
	}
	b := &BufRing{ring: mem, bufs: make([]byte, int(n)*size), size: size, n: n, group: group}
	reg := bufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&mem[0]))), ringEntries: uint32(n), bgid: group}
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerPbufRing, uintptr(unsafe.Pointer(&reg)), 1, 0, 0); errno != 0 {
		_ = unix.Munmap(mem)
		return nil, fmt.Errorf("io_uring register buffer ring: %w", errno)
	}
	for i := range n {
		b.Recycle(i)
	}
	b.Publish()
	return b, nil
}

// Group is the buffer group, for SQE.BufGroup.
func (b *BufRing) Group() uint16 { return b.group }

// Buf is the first n bytes of buffer id.
func (b *BufRing) Buf(id uint16, n int) []byte {
	off := int(id) * b.size
	return b.bufs[off : off+n : off+b.size]
}

// Recycle queues buffer id to be given back to the kernel by Publish.
func (b *BufRing) Recycle(id uint16) {
	e := b.ring[int(b.tail&(b.n-1))*16:]
	*(*uint64)(unsafe.Pointer(&e[0])) = uint64(uintptr(unsafe.Pointer(&b.bufs[int(id)*b.size])))
	*(*uint32)(unsafe.Pointer(&e[8])) = uint32(b.size)
	*(*uint16)(unsafe.Pointer(&e[12])) = id
	b.tail++
}

// Publish gives the recycled buffers back to the kernel: one atomic store
// of the tail (with entry 0's buffer id, which shares its 32 bits).
func (b *BufRing) Publish() {
	w := (*uint32)(unsafe.Pointer(&b.ring[12]))
	atomic.StoreUint32(w, uint32(b.tail)<<16|atomic.LoadUint32(w)&0xffff)
}

// Close unmaps the buffer ring; call it after the Ring's Close.
func (b *BufRing) Close() {
	if b.ring != nil {
		_ = unix.Munmap(b.ring)
		b.ring = nil
	}
}

// FileTable is a sparse table of registered files: a socket put in a slot
// is held by the ring (an entry with FlagFixedFile and the slot as its Fd
// reaches it even once its descriptor is closed, and never another file
// that reuses the number) until the slot is removed. Safe for concurrent
// use where the ring allows registrations from several threads (without
// SetupSingleIssuer).
type FileTable struct {
	r    *Ring
	mu   sync.Mutex
	next int
	size int
	free []int
}

// NewFileTable registers a table of up to max slots, as many as the
// open-files limit allows, or reports why it cannot (an old kernel, or a
// limit under 64).
func (r *Ring) NewFileTable(max int) (*FileTable, error) {
	var lim unix.Rlimit
	n := max
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && lim.Cur < uint64(n) {
		n = int(lim.Cur)
	}
	if n < 64 {
		return nil, errors.New("io_uring: open-files limit too low for a file table")
	}
	if err := r.registerFiles(n); err != nil {
		return nil, err
	}
	return &FileTable{r: r, size: n}, nil
}

// Put puts fd in a free slot and returns the slot.
func (t *FileTable) Put(fd int) (int, error) {
	t.mu.Lock()
	var slot int
	switch {
	case len(t.free) > 0:
		slot = t.free[len(t.free)-1]
		t.free = t.free[:len(t.free)-1]
	case t.next < t.size:
		slot = t.next
		t.next++
	default:
		t.mu.Unlock()
		return -1, errors.New("io_uring: file table full")
	}
	t.mu.Unlock()
	if err := t.r.updateFile(slot, int32(fd)); err != nil {
		t.release(slot)
		return -1, err
	}
	return slot, nil
}

// Remove empties slot (the ring drops its hold on the file) and frees it.
func (t *FileTable) Remove(slot int) {
	if t.r.updateFile(slot, -1) == nil {
		t.release(slot)
	}
}

func (t *FileTable) release(slot int) {
	t.mu.Lock()
	t.free = append(t.free, slot)
	t.mu.Unlock()
}
