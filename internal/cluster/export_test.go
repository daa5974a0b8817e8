package cluster

// PullsInFlight returns how many pulls of the nodes' intervals c has begun and not yet
// merged: a test on a simulated clock moves it on once the only ones out are those its
// nodes hold on that clock (pumpedFleet).
func PullsInFlight(c *Coordinator) int { return int(c.stats.inFlight.Load()) }
