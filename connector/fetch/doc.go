// Package fetch gets the image behind a flow's image_url: through the SSRF
// guard (connector/guard) on every hop, with at most five redirects, a size
// cap enforced while reading, and the format judged from the bytes. It
// implements connector.ImageFetcher.
package fetch
