// Package ci holds example CI pipelines that run a stampede drill against
// a staging server (github-actions.yml, gitlab-ci.yml; docs/ci.md). The
// package has no code; its test runs each pipeline's commands unchanged
// against a bundled target on loopback.
package ci
