package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/stampede-dev/stampede/backoff"
	"github.com/stampede-dev/stampede/httpretry"
	"github.com/stampede-dev/stampede/internal/redact"
	"github.com/stampede-dev/stampede/spec"
)

func init() {
	register(&cli.Command{
		Name:  "http",
		Usage: "send one HTTP request with the retry policy and Retry-After",
		UsageText: "stampede http [--method M] [--data BODY|@FILE] [-H 'Name: value']... [--policy SPEC] [--retries N] URL\n" +
			"stampede http --clients N --rate R --duration D [--idempotency-key auto] [--no-retry-after] [--policies A,B,C] [--out DIR] [--slo EXPR]... [--live] URL",
		Description: "Sends one request, retrying connection failures (dns, refused, timeout, reset) and the\n" +
			"statuses in --status-codes. The wait before a retry is the server's Retry-After hint\n" +
			"(seconds or an HTTP-date), spread upward by up to 20% and never shorter, or else the\n" +
			"backoff policy's delay. A hint above --max-retry-after gives up at once. POST and PATCH\n" +
			"are retried only with an Idempotency-Key header or --retry-post.\n" +
			"Prints one line per attempt: elapsed time, status or error class, and the wait chosen\n" +
			"and why. Exits 0 on a final 2xx, 1 otherwise.\n" +
			"With --clients it runs a fleet instead: N keep-alive clients sharing --rate requests/s on a\n" +
			"fixed schedule for --duration, every request retried as above; it prints goodput,\n" +
			"amplification, Retry-After honoured, early retries and latency from the scheduled send,\n" +
			"writes them to --out (summary.json \"http\") and gates them with --slo (README \"HTTP fleets\n" +
			"under rate limits\"); --live serves the fleet's page while it runs (docs/cli.md \"The live page\").\n\n" +
			"Example (the bundled target's /http, limited to 100 requests/s):\n" +
			"  stampede http --clients 20 --rate 200 --duration 10s http://127.0.0.1:9001/http",
		ArgsUsage: "URL",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "method", Aliases: []string{"X"}, Usage: "request method `M` (default GET, or POST with --data)"},
			&cli.StringFlag{Name: "data", Aliases: []string{"body"}, Usage: "request body: a `BODY` string, or @FILE for a file's contents"},
			&headersFlag{cli.GenericFlag{Name: "header", Value: &headerFlag{}, Usage: "request header `'Name: value'` (repeatable; -H is the same)"}},
			&headersFlag{cli.GenericFlag{Name: "H", Value: &headerFlag{}, Hidden: true}},
			&cli.StringFlag{Name: "policy", Usage: "backoff policy `SPEC` for waits without a hint (default " + httpretry.DefaultPolicy.String() + ")"},
			&cli.IntFlag{Name: "retries", Value: httpretry.DefaultMaxRetries, Usage: "retries `N` after the first attempt (0 = none)"},
			&cli.StringFlag{Name: "status-codes", Value: joinInts(httpretry.DefaultStatusCodes), Usage: "response statuses to retry, comma-separated `LIST` (empty: none)"},
			&cli.BoolFlag{Name: "retry-after", Value: true, Usage: "honour the server's Retry-After hint (--retry-after=false: wait by policy)"},
			&cli.DurationFlag{Name: "max-retry-after", Value: httpretry.DefaultMaxRetryAfter, Usage: "longest Retry-After hint honoured `D`; a longer one gives up"},
			&cli.BoolFlag{Name: "retry-post", Usage: "retry POST and PATCH even without an Idempotency-Key header"},
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "limit `D` on each attempt, until the body is read (0 = none)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "run seed `S` for the jitter and hint-spread draws"},
			allowRemoteFlag,
		}, httpFleetFlags()...),
		Action: httpAction,
	})
}

// httpAction maps flags to an httpretry.Config, sends the request and
// prints one line per attempt.
func httpAction(c *cli.Context) error {
	if c.NArg() == 1 {
		if err := refuseRemote(c, "http", c.Args().First()); err != nil {
			return err
		}
	}
	if c.IsSet("clients") {
		return httpFleetAction(c)
	}
	for _, name := range fleetOnly {
		if c.IsSet(name) {
			return fmt.Errorf("--%s: only with --clients (a fleet)", name)
		}
	}
	if c.IsSet("no-retry-after") || c.IsSet("attempts") {
		// The one-request command takes them too.
		cfg, err := fleetRetryConfig(c)
		if err != nil {
			return err
		}
		return httpOnce(c, cfg)
	}
	cfg, err := httpConfig(c)
	if err != nil {
		return err
	}
	return httpOnce(c, cfg)
}

// httpOnce sends the one request of `stampede http` without --clients.
func httpOnce(c *cli.Context, cfg httpretry.Config) error {
	if c.NArg() != 1 {
		return fmt.Errorf("http: want exactly one URL argument, got %d", c.NArg())
	}
	req, err := httpRequest(c)
	if err != nil {
		return err
	}
	start := time.Now()
	out := c.App.Writer
	cfg.OnAttempt = func(a httpretry.Attempt) { fmt.Fprintln(out, attemptLine(a, start)) }
	client, err := httpretry.New(cfg)
	if err != nil {
		return err
	}

	resp, err := client.Do(req)
	if err != nil {
		var tooLong *httpretry.RetryAfterTooLongError
		if errors.As(err, &tooLong) {
			return cli.Exit(fmt.Sprintf("%s %s: %v (--max-retry-after)", req.Method, shownURL(c, req), tooLong), 1)
		}
		return cli.Exit(err.Error(), 1)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return cli.Exit(fmt.Sprintf("%s %s: final status %s (redirects are not followed)", req.Method, shownURL(c, req), resp.Status), 1)
	}
	return nil
}

// shownURL is the request's URL as printed: without user info or the
// values of secret query parameters (redact.URLWith, --secret-header
// names too).
func shownURL(c *cli.Context, req *http.Request) string {
	var extra []string
	if hasFlag(c, "secret-header") {
		extra = c.StringSlice("secret-header")
	}
	return redact.URLWith(req.URL.String(), extra)
}

// httpRequest builds the request from the URL argument, --method, --data
// and --header. The URL must be absolute http or https with a host.
func httpRequest(c *cli.Context) (*http.Request, error) {
	if hasFlag(c, "secret-header") { // before the URL, whose query it names
		if err := spec.CheckSecretHeaders("HTTP.SecretHeaders", "HTTP.Header", c.StringSlice("secret-header")); err != nil {
			return nil, flagError(err)
		}
	}
	raw := c.Args().First()
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("http: bad URL %q: want http[s]://HOST[:PORT]/PATH", redact.URL(raw))
	}
	if _, err := spec.CheckURL("URL", raw, "http", "https"); err != nil {
		return nil, fmt.Errorf("http: bad URL: %s", err.(*spec.FieldError).Reason)
	}
	if err := spec.CheckResolves(c.Context, "URL", u); err != nil {
		return nil, fmt.Errorf("http: bad URL: %s", err.(*spec.FieldError).Reason)
	}
	var body []byte
	if c.IsSet("data") {
		data := c.String("data")
		if name, ok := strings.CutPrefix(data, "@"); ok {
			if body, err = os.ReadFile(name); err != nil {
				return nil, fmt.Errorf("--data: %w", err)
			}
		} else {
			body = []byte(data)
		}
	}
	method := c.String("method")
	switch {
	case method == "" && body != nil:
		method = http.MethodPost
	case method == "":
		method = http.MethodGet
	case !isToken(method): // a method is a token, like a header name
		return nil, fmt.Errorf("--method: %q is not a valid method", method)
	}
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(string(body)) // NewRequest sets GetBody: replayed on retries
	}
	req, err := http.NewRequestWithContext(c.Context, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("http: %w", err)
	}
	for _, h := range c.Generic("header").(*headerFlag).fields {
		if strings.EqualFold(h[0], "Host") {
			req.Host = h[1]
			continue
		}
		req.Header.Add(h[0], h[1])
	}
	return req, nil
}

// httpConfig maps the retry flags to an httpretry.Config.
func httpConfig(c *cli.Context) (httpretry.Config, error) {
	cfg := httpretry.Config{
		Seed:             c.Uint64("seed"),
		IgnoreRetryAfter: !c.Bool("retry-after"),
		RetryPOST:        c.Bool("retry-post"),
	}
	if c.IsSet("policy") {
		p, err := backoff.Parse(c.String("policy"))
		if err != nil {
			return cfg, fmt.Errorf("--policy: %w", err)
		}
		cfg.Policy = &p
	}
	switch n := c.Int("retries"); {
	case n < 0:
		return cfg, fmt.Errorf("--retries must not be negative, got %d", n)
	case n == 0:
		cfg.MaxRetries = -1 // the library's "none"; its zero means the default
	default:
		cfg.MaxRetries = n
	}
	codes, err := parseStatusCodes(c.String("status-codes"))
	if err != nil {
		return cfg, fmt.Errorf("--status-codes: %w", err)
	}
	cfg.StatusCodes = codes
	if d := c.Duration("max-retry-after"); d <= 0 {
		return cfg, fmt.Errorf("--max-retry-after must be positive, got %s", d)
	} else {
		cfg.MaxRetryAfter = d
	}
	if d := c.Duration("timeout"); d < 0 {
		return cfg, fmt.Errorf("--timeout must not be negative, got %s", d)
	} else {
		cfg.AttemptTimeout = d
	}
	return cfg, cfg.Validate()
}

// parseStatusCodes reads "429,502,503" into a non-nil list (empty for "":
// retry no status), each code a failure status 400-599.
func parseStatusCodes(s string) ([]int, error) {
	codes := []int{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 400 || n > 599 {
			return nil, fmt.Errorf("%q is not a status to retry (want 400-599)", f)
		}
		codes = append(codes, n)
	}
	return codes, nil
}

// joinInts writes a list of ints as "1,2,3".
func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// attemptLine renders one attempt, e.g.
//
//	0.000s  attempt 1  503  wait 2.31s (retry-after 2s)
//	2.314s  attempt 2  200  done
func attemptLine(a httpretry.Attempt, start time.Time) string {
	what := a.Class.String()
	if a.Status != 0 {
		what = strconv.Itoa(a.Status)
	}
	line := fmt.Sprintf("%.3fs  attempt %d  %s  ", a.Start.Sub(start).Seconds(), a.N, what)
	switch {
	case a.Retried():
		line += fmt.Sprintf("wait %s (%s)", a.Wait.Round(time.Millisecond), waitReason(a))
	case a.GiveUp == nil:
		line += "done"
	default:
		line += "giving up: " + giveUpReason(a)
	}
	return line
}

// waitReason says where a wait came from: the server's hint, or the policy
// (and then why a hint was not used).
func waitReason(a httpretry.Attempt) string {
	switch {
	case a.Why == httpretry.WhyRetryAfter:
		return "retry-after " + a.RetryAfter.Round(time.Millisecond).String()
	case a.BadRetryAfter != "":
		return fmt.Sprintf("backoff; bad Retry-After %q ignored", a.BadRetryAfter)
	case a.RetryAfter != 0:
		return "backoff; Retry-After " + a.RetryAfter.Round(time.Millisecond).String() + " ignored"
	}
	return a.Why
}

// giveUpReason names the cause of a last, failed attempt in a few words;
// the full error follows on stderr.
func giveUpReason(a httpretry.Attempt) string {
	switch {
	case errors.Is(a.GiveUp, httpretry.ErrRetryAfterTooLong):
		return "retry-after " + a.RetryAfter.Round(time.Millisecond).String() + " above --max-retry-after"
	case errors.Is(a.GiveUp, httpretry.ErrRetriesExhausted):
		return "retries exhausted"
	case errors.Is(a.GiveUp, httpretry.ErrNotRetryable):
		return "not retryable"
	}
	return a.GiveUp.Error()
}

// headerFlag collects repeated --header 'Name: value' flags. It does not
// split on commas (a cli.StringSliceFlag would), since header values may
// hold them.
type headerFlag struct {
	fields [][2]string
}

// Set adds one "Name: value" header, checking the name is a token.
func (h *headerFlag) Set(s string) error {
	if len(s) > maxHeaderLine {
		return fmt.Errorf("a header of %d bytes; at most %d", len(s), maxHeaderLine)
	}
	name, value, ok := strings.Cut(s, ":")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !ok || !isToken(name) || strings.ContainsFunc(value, isCTL) {
		return errors.New("want 'Name: value'")
	}
	h.fields = append(h.fields, [2]string{name, value})
	return nil
}

// maxHeaderLine caps one header given to -H: servers refuse far less
// (8 to 64 KiB of headers), and a plan carrying megabytes reaches the
// processes it starts slowly, if at all.
const maxHeaderLine = 64 << 10

// String lists the headers as given.
func (h *headerFlag) String() string {
	s := make([]string, len(h.fields))
	for i, f := range h.fields {
		s[i] = f[0] + ": " + f[1]
	}
	return strings.Join(s, ", ")
}

// headersFlag is one of the two header flags, --header and -H. They are two
// flags sharing one list rather than a flag and its alias because urfave/cli
// refuses a command line that uses both forms of one flag ("-H a --header
// b"), and copies a value from one form to the other through its text,
// which would re-add every header. The list is made afresh in every run: a
// plain cli.GenericFlag keeps one Value, and so an earlier run's headers,
// for the life of the process.
type headersFlag struct {
	cli.GenericFlag
}

// Apply registers this run's header list under the flag's name, creating
// it unless the other header flag already did.
func (f *headersFlag) Apply(set *flag.FlagSet) error {
	var v flag.Value = &headerFlag{}
	for _, name := range []string{"header", "H"} {
		if g := set.Lookup(name); g != nil {
			v = g.Value
			break
		}
	}
	set.Var(v, f.Name, f.Usage)
	return nil
}

// isToken reports whether s is an RFC 9110 token: the syntax of a method
// and of a header name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("!#$%&'*+-.^_`|~", r):
		default:
			return false
		}
	}
	return true
}

// isCTL reports a control character other than tab: not allowed in a
// header value.
func isCTL(r rune) bool { return (r < ' ' && r != '\t') || r == 0x7f }
