package drift

import "regexp"

// throttling matches what cloud APIs and their providers say when they
// throttle a caller: HTTP 429 (as a status, not any 429 in a message),
// AWS's "Rate exceeded", "Throttling"/"ThrottlingException",
// "RequestLimitExceeded" and "SlowDown", "TooManyRequests" (Azure,
// Kubernetes) and "rate limit exceeded" (GitHub, GCP).
var throttling = regexp.MustCompile(`(?i)(status(?:\s*code)?\s*[:=]?\s*429\b|\b429 too many requests|\bhttp(?:/[\d.]+)?\s+429\b|\(429\)|rate exceeded|\bthrottl(?:ed|ing)|toomanyrequests|too many requests|requestlimitexceeded|\bslowdown\b|rate limit(?:ed| exceeded))`)

// Throttled reports whether an errored run's reason says the cloud API
// throttled the plan: such a run says nothing about drift, and is tried
// again once its concurrency group has backed off.
func Throttled(reason string) bool { return throttling.MatchString(reason) }
