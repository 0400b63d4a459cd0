// Package guard keeps imgflow's outgoing requests out of private networks
// (SSRF protection). Its transport checks the resolved address of every
// connection at the dial, redirects included, so a host name that resolves
// to a loopback, private or link-local address is refused whatever the URL
// string looked like; CheckURL does the same check early, for a 400 at
// submission. The image fetcher and the webhook sender share the transport.
package guard
