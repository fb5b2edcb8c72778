//go:build linux

package sim

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A minimal io_uring (Linux ≥ 5.6) that submits a batch of socket sends with
// one io_uring_enter(2): the clock's way of writing every token due in one
// tick to many connections for the price of one system call entry. Only
// IORING_OP_SEND with MSG_DONTWAIT is used, so every send completes inline
// during the submission (or fails with EAGAIN) and no kernel worker ever
// holds a buffer after the call returns.

const (
	uringOpSend         = 26 // IORING_OP_SEND
	uringSetupSubmitAll = 1 << 7
	uringEnterGetEvents = 1 << 0
	uringOffSQRing      = 0
	uringOffCQRing      = 0x8000000
	uringOffSQEs        = 0x10000000
	uringRegisterProbe  = 8
	uringOpSupported    = 1 << 0
	uringEntries        = 512
	uringRegisterFiles  = 2 // IORING_REGISTER_FILES
	uringUpdateFiles    = 6 // IORING_REGISTER_FILES_UPDATE
	uringFixedFile      = 1 // IOSQE_FIXED_FILE
	uringMaxFixed       = 1 << 16
)

// uringSQE is struct io_uring_sqe (64 bytes).
type uringSQE struct {
	opcode   uint8
	flags    uint8
	ioprio   uint16
	fd       int32
	off      uint64
	addr     uint64
	len      uint32
	msgFlags uint32
	userData uint64
	_        [3]uint64
}

// uringCQE is struct io_uring_cqe (16 bytes).
type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

type uringSQOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type uringCQOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// uringParams is struct io_uring_params.
type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  uringSQOffsets
	cqOff                                                                  uringCQOffsets
}

// uring is one submission/completion ring pair. It is not safe for
// concurrent use: one clock goroutine owns it.
type uring struct {
	fd             int
	sqRing, cqRing []byte
	sqeMem         []byte
	sqHead, sqTail *uint32
	sqMask         uint32
	sqArray        []uint32
	sqes           []uringSQE
	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []uringCQE
	entries        uint32

	// Registered files: a sparse table the sockets are held in.
	fixed     bool
	fixedMu   sync.Mutex
	nextSlot  int
	fixedSize int
	freeSlot  []int
}

// newURing sets up a ring, or reports why io_uring cannot be used here
// (kernel too old, disabled by kernel.io_uring_disabled, or refused by a
// seccomp filter, as in many containers).
func newURing() (*uring, error) {
	var p uringParams
	p.flags = uringSetupSubmitAll
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uringEntries, uintptr(unsafe.Pointer(&p)), 0)
	if errno == unix.EINVAL {
		p = uringParams{}
		fd, _, errno = unix.Syscall(unix.SYS_IO_URING_SETUP, uringEntries, uintptr(unsafe.Pointer(&p)), 0)
	}
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r := &uring{fd: int(fd), entries: p.sqEntries}
	if err := r.mmap(&p); err != nil {
		r.close()
		return nil, err
	}
	if err := r.probeSend(); err != nil {
		r.close()
		return nil, err
	}
	r.registerTable()
	return r, nil
}

// registerTable registers a sparse table of files (all -1), as large as the
// open-files limit allows; without it (an old kernel) sockets are held by
// duplicated descriptors.
func (r *uring) registerTable() {
	var lim unix.Rlimit
	n := uringMaxFixed
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && lim.Cur < uint64(n) {
		n = int(lim.Cur)
	}
	if n < 64 {
		return
	}
	fds := make([]int32, n)
	for i := range fds {
		fds[i] = -1
	}
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), uringRegisterFiles, uintptr(unsafe.Pointer(&fds[0])), uintptr(n), 0, 0)
	if errno == 0 {
		r.fixed = true
		r.freeSlot = make([]int, 0, 64)
		r.nextSlot = 0
		r.fixedSize = n
	}
}

// uringFilesUpdate is struct io_uring_files_update.
type uringFilesUpdate struct {
	offset uint32
	resv   uint32
	fds    uint64
}

// register puts socket fd in a free slot of the file table and returns the
// slot.
func (r *uring) register(fd int) (int, error) {
	r.fixedMu.Lock()
	var slot int
	switch {
	case len(r.freeSlot) > 0:
		slot = r.freeSlot[len(r.freeSlot)-1]
		r.freeSlot = r.freeSlot[:len(r.freeSlot)-1]
	case r.nextSlot < r.fixedSize:
		slot = r.nextSlot
		r.nextSlot++
	default:
		r.fixedMu.Unlock()
		return -1, errors.New("io_uring: file table full")
	}
	r.fixedMu.Unlock()
	if err := r.update(slot, int32(fd)); err != nil {
		r.freeSlotPut(slot)
		return -1, err
	}
	return slot, nil
}

// unregister empties a slot from register.
func (r *uring) unregister(slot int) {
	if r.update(slot, -1) == nil {
		r.freeSlotPut(slot)
	}
}

func (r *uring) freeSlotPut(slot int) {
	r.fixedMu.Lock()
	r.freeSlot = append(r.freeSlot, slot)
	r.fixedMu.Unlock()
}

func (r *uring) update(slot int, fd int32) error {
	fds := [1]int32{fd}
	up := uringFilesUpdate{offset: uint32(slot), fds: uint64(uintptr(unsafe.Pointer(&fds[0])))}
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), uringUpdateFiles, uintptr(unsafe.Pointer(&up)), 1, 0, 0)
	runtime.KeepAlive(&fds)
	if errno != 0 {
		return fmt.Errorf("io_uring files update: %w", errno)
	}
	return nil
}

func (r *uring) mmap(p *uringParams) error {
	var err error
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(uringCQE{})))
	const prot, flags = unix.PROT_READ | unix.PROT_WRITE, unix.MAP_SHARED | unix.MAP_POPULATE
	if r.sqRing, err = unix.Mmap(r.fd, uringOffSQRing, sqSize, prot, flags); err != nil {
		return fmt.Errorf("mapping the io_uring submission ring: %w", err)
	}
	if r.cqRing, err = unix.Mmap(r.fd, uringOffCQRing, cqSize, prot, flags); err != nil {
		return fmt.Errorf("mapping the io_uring completion ring: %w", err)
	}
	if r.sqeMem, err = unix.Mmap(r.fd, uringOffSQEs, int(p.sqEntries)*int(unsafe.Sizeof(uringSQE{})), prot, flags); err != nil {
		return fmt.Errorf("mapping the io_uring submission entries: %w", err)
	}
	r.sqHead = (*uint32)(unsafe.Pointer(&r.sqRing[p.sqOff.head]))
	r.sqTail = (*uint32)(unsafe.Pointer(&r.sqRing[p.sqOff.tail]))
	r.sqMask = *(*uint32)(unsafe.Pointer(&r.sqRing[p.sqOff.ringMask]))
	r.sqArray = unsafe.Slice((*uint32)(unsafe.Pointer(&r.sqRing[p.sqOff.array])), p.sqEntries)
	r.sqes = unsafe.Slice((*uringSQE)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	r.cqHead = (*uint32)(unsafe.Pointer(&r.cqRing[p.cqOff.head]))
	r.cqTail = (*uint32)(unsafe.Pointer(&r.cqRing[p.cqOff.tail]))
	r.cqMask = *(*uint32)(unsafe.Pointer(&r.cqRing[p.cqOff.ringMask]))
	r.cqes = unsafe.Slice((*uringCQE)(unsafe.Pointer(&r.cqRing[p.cqOff.cqes])), p.cqEntries)
	return nil
}

// probeSend checks that the kernel knows IORING_OP_SEND.
func (r *uring) probeSend() error {
	// struct io_uring_probe: last_op, ops_len, resv, resv2[3], then
	// ops_len × struct io_uring_probe_op {op, resv, flags u16, resv2 u32}.
	const nOps = 64
	var buf [16 + nOps*8]byte
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), uringRegisterProbe, uintptr(unsafe.Pointer(&buf[0])), nOps, 0, 0)
	if errno != 0 {
		return fmt.Errorf("io_uring probe: %w", errno)
	}
	op := buf[16+uringOpSend*8:]
	if lastOp := buf[0]; lastOp < uringOpSend || *(*uint16)(unsafe.Pointer(&op[2]))&uringOpSupported == 0 {
		return errors.New("io_uring: IORING_OP_SEND not supported by this kernel")
	}
	return nil
}

func (r *uring) close() {
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

// sendAll sends each op's bytes on its socket, ring-sized chunks at a time,
// one io_uring_enter per chunk, and stores each result (bytes sent, or
// -errno) in op.res.
func (r *uring) sendAll(ops []sendOp) {
	for len(ops) > 0 {
		n := min(len(ops), int(r.entries))
		r.sendChunk(ops[:n])
		ops = ops[n:]
	}
}

func (r *uring) sendChunk(ops []sendOp) {
	first := atomic.LoadUint32(r.sqTail)
	tail := first
	for i := range ops {
		op := &ops[i]
		if len(op.b) == 0 {
			op.res = 0
			continue
		}
		op.res = -int32(unix.ECANCELED)
		idx := tail & r.sqMask
		var flags uint8
		if r.fixed {
			flags = uringFixedFile
		}
		r.sqes[idx] = uringSQE{
			opcode:   uringOpSend,
			flags:    flags,
			fd:       int32(op.fd),
			addr:     uint64(uintptr(unsafe.Pointer(unsafe.SliceData(op.b)))),
			len:      uint32(len(op.b)),
			msgFlags: unix.MSG_DONTWAIT | unix.MSG_NOSIGNAL,
			userData: uint64(i),
		}
		r.sqArray[idx] = idx
		tail++
	}
	atomic.StoreUint32(r.sqTail, tail)
	want := int(tail - first)
	submitted := 0
	for submitted < want {
		// Non-blocking sends complete during the submission, so this call
		// does not sleep; it is a raw system call to spare the scheduler
		// hand-off of a blocking one.
		n, _, errno := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(want-submitted), 0, 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 || n == 0 {
			// A ring-level failure: withdraw the entries the kernel has not
			// taken, so that it never reads their buffers later, and send
			// those plainly (or fail them, for registered files).
			head := atomic.LoadUint32(r.sqHead)
			atomic.StoreUint32(r.sqTail, head)
			taken := int(head - first)
			for i := range ops {
				if ops[i].res == -int32(unix.ECANCELED) && taken == 0 {
					if r.fixed {
						ops[i].res = -int32(unix.EIO) // a slot is no descriptor
					} else {
						sendEach(ops[i : i+1])
					}
				} else if ops[i].res == -int32(unix.ECANCELED) {
					taken--
				}
			}
			want = int(head - first)
			break
		}
		submitted += int(n)
	}
	got := r.reap(ops)
	for got < want {
		// A completion still outstanding (not expected with MSG_DONTWAIT):
		// wait for it with a system call the scheduler knows may block.
		_, _, errno := syscall.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), 0, 1, uringEnterGetEvents, 0, 0)
		if errno != 0 && errno != unix.EINTR {
			return // ops keep -ECANCELED: the streams fail
		}
		got += r.reap(ops)
	}
}

// pendingSQ is the number of submission entries the kernel has not taken.
func (r *uring) pendingSQ() uint32 {
	return atomic.LoadUint32(r.sqTail) - atomic.LoadUint32(r.sqHead)
}

// reap reads the completions in the ring into ops and returns their number.
func (r *uring) reap(ops []sendOp) int {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	n := 0
	for ; head != tail; head++ {
		c := &r.cqes[head&r.cqMask]
		if i := int(c.userData); i < len(ops) {
			ops[i].res = c.res
		}
		n++
	}
	atomic.StoreUint32(r.cqHead, head)
	return n
}
