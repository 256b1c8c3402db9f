package sandbox

import (
	"net"
	"net/url"
)

// freeLocalURL reserves a free loopback port and returns it as a URL. The
// port is released before etcd binds it; on a busy machine another process
// could take it in between, which surfaces as a start error, not a hang.
func freeLocalURL(scheme string) (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, err
	}
	defer l.Close()
	return url.URL{Scheme: scheme, Host: l.Addr().String()}, nil
}
