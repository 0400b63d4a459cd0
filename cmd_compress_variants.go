package main

import "github.com/imgflow/imgflow/internal/compresscli"

// --variants: each file a responsive set, a result per variant
// (internal/compresscli/variants.go).
func init() {
	compressFlags = append(compressFlags, func(fs *flagSet) func(*compresscli.Options) error {
		var spec string
		fs.String(&spec, "variants", "", "", "make each image a set of sizes: sm=320w,md=800w,lg=1600w:webp (ID=SIZE[:TYPE]) or a JSON file; results name-ID.ext")
		return func(o *compresscli.Options) error {
			if spec == "" {
				return nil
			}
			vs, err := compresscli.ParseVariants(spec)
			o.Variants = vs
			return err
		}
	})
}
