package bench

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
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
		buf := make([]byte, 32*1024)
		for {
			n, err := from.Read(buf)
			if n > 0 {
				chunks <- chunk{append([]byte(nil), buf[:n]...), time.Now().Add(p.delay)}
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

// TestBenchProxy is the latency proxy in a process of its own, as a network
// is: in the bench's, which holds the API server, its copying would take
// the server's CPU and garbage collection. It serves until its stdin
// closes.
func TestBenchProxy(t *testing.T) {
	target := os.Getenv("BENCH_PROXY_TARGET")
	if target == "" {
		t.Skip("the proxy's child process of TestBenchTable")
	}
	delay, err := time.ParseDuration(os.Getenv("BENCH_PROXY_DELAY"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := startProxy(target, delay)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(proxyAddr + p.addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	p.close()
}

const proxyAddr = "proxy-addr: "

// startProxyProcess runs TestBenchProxy in a child process and returns its
// address; the child ends with the test.
func startProxyProcess(t *testing.T, target string, delay time.Duration) string {
	t.Helper()
	cmd, stdin, out := childTest(t, "TestBenchProxy", "BENCH_PROXY_TARGET="+target, "BENCH_PROXY_DELAY="+delay.String())
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	for out.Scan() {
		if addr, ok := strings.CutPrefix(out.Text(), proxyAddr); ok {
			go func() {
				for out.Scan() {
				}
			}()
			return addr
		}
	}
	t.Fatalf("the proxy did not start")
	return ""
}

// childTest starts this test binary again, running test alone with env
// added; the child reads its stdin until it closes, and out is its stdout.
func childTest(t *testing.T, test string, env ...string) (cmd *exec.Cmd, stdin io.WriteCloser, out *bufio.Scanner) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdin, bufio.NewScanner(stdout)
}
