package bench

import (
	"io"
	"net"
	"sync"
	"time"
)

// latencyProxy forwards TCP connections to target, delivering every chunk
// in each direction delay after it was sent — a server a network away. The
// chunks of a connection stay in order and are pipelined, so the proxy adds
// latency, not a throughput cap.
type latencyProxy struct {
	listener net.Listener
	target   string
	delay    time.Duration
	wg       sync.WaitGroup
}

func startProxy(target string, delay time.Duration) (*latencyProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &latencyProxy{listener: l, target: target, delay: delay}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *latencyProxy) addr() string { return p.listener.Addr().String() }

func (p *latencyProxy) close() {
	_ = p.listener.Close()
	p.wg.Wait()
}

func (p *latencyProxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.listener.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

type chunk struct {
	data []byte
	due  time.Time
}

func (p *latencyProxy) pipe(from, to net.Conn) {
	chunks := make(chan chunk, 1024)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32*1024)
			n, err := from.Read(buf)
			if n > 0 {
				chunks <- chunk{buf[:n], time.Now().Add(p.delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range chunks {
		time.Sleep(time.Until(c.due)) // the modelled network delay itself
		if _, err := to.Write(c.data); err != nil {
			break
		}
	}
	_ = to.Close()
	_, _ = io.Copy(io.Discard, from)
}
