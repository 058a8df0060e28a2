// Command apicall makes one HTTP request to cgpud over its Unix socket and
// prints the status code on the first line, then the body. The VM guest is
// busybox without curl; the daemon suite uses this.
//
//	apicall [-s SOCKET] [-t CONTENT-TYPE] [-wait DURATION]
//	        [-uid N -gid N [-groups G,G]] METHOD PATH [BODY|-]
//
// BODY "-" reads stdin. -wait retries the connection until the daemon
// answers. -uid/-gid/-groups drop root's privileges first, so a test can
// be a peer that is not root (busybox's setpriv cannot change ids). Exit status: 0 when a response came (whatever its status), 1
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
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	sock := flag.String("s", "/run/cgpu/cgpud.sock", "the daemon's socket")
	ctype := flag.String("t", "application/json", "Content-Type of the body (\"\" for none)")
	wait := flag.Duration("wait", 0, "retry connecting this long")
	timeout := flag.Duration("timeout", 30*time.Second, "the whole request's limit")
	uid := flag.Int("uid", -1, "become this uid before connecting")
	gid := flag.Int("gid", -1, "become this gid before connecting (with -uid)")
	groups := flag.String("groups", "", "supplementary groups, comma-separated (with -uid)")
	flag.Parse()
	if *uid >= 0 {
		if err := become(*uid, *gid, *groups); err != nil {
			fmt.Fprintln(os.Stderr, "apicall:", err)
			os.Exit(2)
		}
	}
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

// become drops to uid/gid with the given supplementary groups; Go applies
// each call to every thread of the process.
func become(uid, gid int, groups string) error {
	var gs []int
	for _, g := range strings.Split(groups, ",") {
		if g == "" {
			continue
		}
		n, err := strconv.Atoi(g)
		if err != nil {
			return fmt.Errorf("-groups: %q: %w", g, err)
		}
		gs = append(gs, n)
	}
	if gid < 0 {
		gid = uid
	}
	if err := syscall.Setgroups(gs); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(gid); err != nil {
		return fmt.Errorf("setgid: %w", err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("setuid: %w", err)
	}
	return nil
}
