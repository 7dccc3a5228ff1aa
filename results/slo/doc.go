// Package slo is the SLO language of --slo: it parses expressions such as
// "r99<5s" or "lost==0" over the figures of a summary.Summary and
// evaluates them into the summary's SLO results.
package slo
