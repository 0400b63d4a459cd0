#include <stddef.h>

enum { SHIM_JPEG = 1, SHIM_PNG, SHIM_WEBP, SHIM_AVIF };

typedef struct {
	char loader[64];
	int width, height, orientation, has_exif;
} shim_info;

typedef struct {
	int width, height; // the box; VIPS_MAX_COORD on a side that does not bound
	int size;          // VipsSize: 0 both, 2 down
	int crop;          // VipsInteresting: 0 none, 3 attention
	int flatten;
	double background[3];
	int format, quality, lossless;
	int palette, bitdepth; // PNG: quantized to 2^bitdepth colours
	double dither;
	long long budget_ms; // the computation is killed after this long (0: never)
	int standard_huffman; // JPEG: libjpeg's standard tables, no optimizing pass
} shim_params;

typedef struct {
	void *data;
	size_t len;
	int width, height;
	int killed; // the budget ran out
} shim_result;

const char *shim_load(const char *lib);
int shim_version(int part);
void shim_concurrency(int n);
char *shim_probe(const void *buf, size_t len, shim_info *info);
char *shim_blob(const void *buf, size_t len, const char *name, size_t max, void **out, size_t *outlen);
char *shim_transform(void *buf, size_t len, const shim_params *p, shim_result *r);
char *shim_variant(void *handle, const shim_params *p, shim_result *r);
void shim_free(void *p);
char *shim_decode(void *buf, size_t len, const shim_params *p, void **handle, int *width, int *height);
char *shim_scale(void *handle, double scale, void **out, int *width, int *height);
char *shim_encode(void *handle, const shim_params *p, shim_result *r);
char *shim_resize_to(void *handle, int width, int height, void **out, int *outw, int *outh);
char *shim_pixels(void *handle, void **out, size_t *len, int *width, int *height, int *bands);
void shim_unref(void *handle);
