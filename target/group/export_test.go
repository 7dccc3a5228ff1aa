package group

// StartTestGroup starts a group of this test binary's processes for the
// tests of package group_test.
var StartTestGroup = startGroup
