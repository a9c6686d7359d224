package sandbox

// StartJailed is startJailed, for the tests of the package sandbox_test.
var StartJailed = startJailed
