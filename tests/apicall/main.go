// Command apicall makes one HTTP request to cgpud over its Unix socket and
// prints the status code on the first line, then the body. The VM guest is
// busybox without curl; the daemon suite uses this.
//
//	apicall [-s SOCKET] [-t CONTENT-TYPE] [-wait DURATION] METHOD PATH [BODY|-]
//
// BODY "-" reads stdin. -wait retries the connection until the daemon
// answers. Exit status: 0 when a response came (whatever its status), 1
// when none did, 2 for bad usage.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	sock := flag.String("s", "/run/cgpu/cgpud.sock", "the daemon's socket")
	ctype := flag.String("t", "application/json", "Content-Type of the body (\"\" for none)")
	wait := flag.Duration("wait", 0, "retry connecting this long")
	timeout := flag.Duration("timeout", 30*time.Second, "the whole request's limit")
	flag.Parse()
	if flag.NArg() < 2 || flag.NArg() > 3 {
		fmt.Fprintln(os.Stderr, "usage: apicall [-s SOCKET] [-t TYPE] [-wait D] METHOD PATH [BODY|-]")
		os.Exit(2)
	}
	method, path := flag.Arg(0), flag.Arg(1)
	var payload *string
	if flag.NArg() == 3 {
		p := flag.Arg(2)
		if p == "-" {
			b, err := io.ReadAll(os.Stdin)
			if err != nil {
				fmt.Fprintln(os.Stderr, "apicall:", err)
				os.Exit(1)
			}
			p = string(b)
		}
		payload = &p
	}
	client := &http.Client{
		Timeout: *timeout,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", *sock)
		}},
	}
	deadline := time.Now().Add(*wait)
	for {
		var body io.Reader
		if payload != nil {
			body = strings.NewReader(*payload)
		}
		req, err := http.NewRequest(method, "http://cgpud"+path, body)
		if err != nil {
			fmt.Fprintln(os.Stderr, "apicall:", err)
			os.Exit(2)
		}
		if body != nil && *ctype != "" {
			req.Header.Set("Content-Type", *ctype)
		}
		resp, err := client.Do(req)
		if err != nil {
			if time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			fmt.Fprintln(os.Stderr, "apicall:", err)
			os.Exit(1)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode)
		os.Stdout.Write(b)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			fmt.Println()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "apicall: reading the body:", err)
			os.Exit(1)
		}
		return
	}
}
