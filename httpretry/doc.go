// Package httpretry is stampede's HTTP retry client: one request, retried on
// connection-level failures and on the statuses a server uses to say "not
// now" (429, 502, 503, 504, 529), with waits from the shared backoff policy or the
// server's Retry-After hint, spread upward so a fleet told the same hint does
// not return in one instant.
//
//	request ──> attempt ──> response / error
//	               │
//	               ├─ 2xx, 3xx, 4xx, other 5xx ........ stop
//	               ├─ retryable status, Retry-After ... wait Hinted(hint) (give up above the cap)
//	               ├─ retryable status or conn error .. wait Policy.Delay(attempt)
//	               ├─ wait would outlast ctx's deadline  stop (ErrPastDeadline)
//	               └─ retries exhausted, ctx done ..... stop with a *RetryError
//
// Every attempt is recorded as an Attempt and handed to Config.OnAttempt
// before the wait, so a caller can print or count them as they happen. The
// clock and the sleeper are injected, so tests run in virtual time.
package httpretry
