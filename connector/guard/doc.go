// Package guard keeps imgflow's outgoing requests out of private networks
// (SSRF protection). Its transport checks the resolved address of every
// connection at the dial, redirects included, so a host name that resolves
// to a loopback, private, link-local or otherwise non-public address is
// refused whatever the URL string looked like; CheckURL does the same check
// early, for a 400 at submission. The image fetcher and the webhook sender
// share the transport.
//
// A Policy names the exceptions: nothing in production, loopback in dev,
// plus whatever the operator lists (IMGFLOW_ALLOW_HOSTS). There is no
// switch that turns the guard off.
package guard
