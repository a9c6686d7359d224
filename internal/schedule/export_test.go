package schedule

// Internals exposed to the external test package.
var JitterOffset = jitterOffset
