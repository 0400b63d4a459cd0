// libvips bound at run time (dlopen), so that imgflow builds and runs on a
// machine without it: see vips.go. Prototypes are those of libvips 8.x
// (stable C API); images and arrays stay opaque here.
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "vips_shim.h"

typedef void VipsImage;

static int (*p_init)(const char *);
static char *(*p_error_buffer_copy)(void);
static void (*p_error_clear)(void);
static void (*p_cache_set_max)(int);
static void (*p_cache_set_max_mem)(size_t);
static void (*p_cache_set_max_files)(int);
static void (*p_image_set_progress)(VipsImage *, int);
static void (*p_image_set_kill)(VipsImage *, int);
static unsigned long (*p_signal_connect_data)(void *, const char *, void (*)(void), void *, void *, int);
static void (*p_concurrency_set)(int);
static int (*p_version)(int);
static VipsImage *(*p_new_from_buffer)(const void *, size_t, const char *, ...);
static int (*p_thumbnail_buffer)(void *, size_t, VipsImage **, int, ...);
static int (*p_thumbnail_image)(VipsImage *, VipsImage **, int, ...);
static VipsImage *(*p_copy_memory)(VipsImage *);
static int (*p_flatten)(VipsImage *, VipsImage **, ...);
static int (*p_jpegsave_buffer)(VipsImage *, void **, size_t *, ...);
static int (*p_pngsave_buffer)(VipsImage *, void **, size_t *, ...);
static int (*p_webpsave_buffer)(VipsImage *, void **, size_t *, ...);
static int (*p_heifsave_buffer)(VipsImage *, void **, size_t *, ...);
static void *(*p_array_double_new)(const double *, int);
static void (*p_area_unref)(void *);
static int (*p_get_width)(const VipsImage *);
static int (*p_get_height)(const VipsImage *);
static int (*p_hasalpha)(VipsImage *);
static int (*p_get_int)(const VipsImage *, const char *, int *);
static int (*p_get_blob)(const VipsImage *, const char *, const void **, size_t *);
static unsigned long (*p_get_typeof)(const VipsImage *, const char *);
static const char *(*p_find_load_buffer)(const void *, size_t);
static void (*p_object_unref)(void *);
static int (*p_copy)(VipsImage *, VipsImage **, ...);
static char **(*p_get_fields)(VipsImage *);
static int (*p_remove)(VipsImage *, const char *);
static void (*p_strfreev)(char **);
static void (*p_g_free)(void *);
static VipsImage *(*p_image_copy_memory)(VipsImage *);
static int (*p_resize)(VipsImage *, VipsImage **, double, ...);
static int (*p_colourspace)(VipsImage *, VipsImage **, int, ...);
static int (*p_cast)(VipsImage *, VipsImage **, int, ...);
static void *(*p_write_to_memory)(VipsImage *, size_t *);
static int (*p_get_bands)(const VipsImage *);

#define SYM(p, name) if (!(*(void **)(&p) = dlsym(h, name))) { snprintf_missing(name); return missing; }

static char missing[160];
static void snprintf_missing(const char *name) {
	strcpy(missing, "libvips lacks ");
	strncat(missing, name, sizeof(missing) - strlen(missing) - 1);
}

static char *errcopy(void) {
	char *e = p_error_buffer_copy();
	char *out = strdup(e ? e : "libvips failed");
	if (e) p_g_free(e);
	return out;
}

const char *shim_load(const char *lib) {
	void *h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		const char *e = dlerror();
		strncpy(missing, e ? e : "libvips.so.42 not found", sizeof(missing) - 1);
		return missing;
	}
	SYM(p_init, "vips_init");
	SYM(p_error_buffer_copy, "vips_error_buffer_copy");
	SYM(p_error_clear, "vips_error_clear");
	SYM(p_cache_set_max, "vips_cache_set_max");
	SYM(p_cache_set_max_mem, "vips_cache_set_max_mem");
	SYM(p_cache_set_max_files, "vips_cache_set_max_files");
	SYM(p_image_set_progress, "vips_image_set_progress");
	SYM(p_image_set_kill, "vips_image_set_kill");
	SYM(p_signal_connect_data, "g_signal_connect_data");
	SYM(p_concurrency_set, "vips_concurrency_set");
	SYM(p_version, "vips_version");
	SYM(p_new_from_buffer, "vips_image_new_from_buffer");
	SYM(p_thumbnail_buffer, "vips_thumbnail_buffer");
	SYM(p_thumbnail_image, "vips_thumbnail_image");
	SYM(p_copy_memory, "vips_image_copy_memory");
	SYM(p_flatten, "vips_flatten");
	SYM(p_jpegsave_buffer, "vips_jpegsave_buffer");
	SYM(p_pngsave_buffer, "vips_pngsave_buffer");
	SYM(p_webpsave_buffer, "vips_webpsave_buffer");
	SYM(p_heifsave_buffer, "vips_heifsave_buffer");
	SYM(p_array_double_new, "vips_array_double_new");
	SYM(p_area_unref, "vips_area_unref");
	SYM(p_get_width, "vips_image_get_width");
	SYM(p_get_height, "vips_image_get_height");
	SYM(p_hasalpha, "vips_image_hasalpha");
	SYM(p_get_int, "vips_image_get_int");
	SYM(p_get_blob, "vips_image_get_blob");
	SYM(p_get_typeof, "vips_image_get_typeof");
	SYM(p_find_load_buffer, "vips_foreign_find_load_buffer");
	SYM(p_object_unref, "g_object_unref");
	SYM(p_copy, "vips_copy");
	SYM(p_get_fields, "vips_image_get_fields");
	SYM(p_remove, "vips_image_remove");
	SYM(p_strfreev, "g_strfreev");
	SYM(p_g_free, "g_free");
	SYM(p_image_copy_memory, "vips_image_copy_memory");
	SYM(p_resize, "vips_resize");
	SYM(p_colourspace, "vips_colourspace");
	SYM(p_cast, "vips_cast");
	SYM(p_write_to_memory, "vips_image_write_to_memory");
	SYM(p_get_bands, "vips_image_get_bands");
	if (p_init("imgflow")) {
		return "vips_init failed";
	}
	// No operation cache: every job is new bytes, and a cached operation
	// would keep a reference to a caller's buffer after the call returns.
	p_cache_set_max(0);
	p_cache_set_max_mem(0);
	p_cache_set_max_files(0);
	return NULL;
}

int shim_version(int part) { return p_version(part); }

void shim_concurrency(int n) { p_concurrency_set(n); }

// shim_probe reads the header only (no pixels): the loader, the stored
// dimensions and the EXIF orientation (1 when none).
char *shim_probe(const void *buf, size_t len, shim_info *info) {
	const char *loader = p_find_load_buffer(buf, len);
	if (!loader) {
		p_error_clear();
		return strdup("not an image libvips can read");
	}
	strncpy(info->loader, loader, sizeof(info->loader) - 1);
	VipsImage *img = p_new_from_buffer(buf, len, "", NULL);
	if (!img) {
		char *e = errcopy();
		p_error_clear();
		return e;
	}
	info->width = p_get_width(img);
	info->height = p_get_height(img);
	info->orientation = 1;
	if (p_get_typeof(img, "orientation")) {
		p_get_int(img, "orientation", &info->orientation);
	}
	info->has_exif = p_get_typeof(img, "exif-data") != 0;
	p_object_unref(img);
	return NULL;
}

// shim_blob copies a metadata blob of the image ("exif-data": a TIFF
// structure, "Exif\0\0" prefix included when libvips keeps it;
// "xmp-data": the XMP packet) into malloc'd memory; *len 0 when none. A
// blob over max is not copied: *out stays NULL and *outlen says its size.
char *shim_blob(const void *buf, size_t len, const char *name, size_t max, void **out, size_t *outlen) {
	*out = NULL;
	*outlen = 0;
	VipsImage *img = p_new_from_buffer(buf, len, "", NULL);
	if (!img) {
		char *e = errcopy();
		p_error_clear();
		return e;
	}
	if (p_get_typeof(img, name)) {
		const void *data = NULL;
		size_t n = 0;
		if (p_get_blob(img, name, &data, &n) != 0) {
			p_error_clear();
		} else if (n > max) {
			*outlen = n;
		} else if (n > 0) {
			*out = malloc(n);
			memcpy(*out, data, n);
			*outlen = n;
		}
	}
	p_object_unref(img);
	return NULL;
}

static int save(VipsImage *img, const shim_params *p, void **out, size_t *outlen) {
	switch (p->format) {
	case SHIM_JPEG:
		return p_jpegsave_buffer(img, out, outlen, "Q", p->quality, "strip", 1,
			"optimize_coding", !p->standard_huffman, NULL);
	case SHIM_PNG:
		if (p->palette) {
			// Quantized to at most 2^bitdepth colours; the quality is
			// libimagequant's, which lowers the colours it keeps.
			return p_pngsave_buffer(img, out, outlen, "compression", 6, "strip", 1, "palette", 1,
				"Q", p->quality, "bitdepth", p->bitdepth, "dither", p->dither, "effort", 3, NULL);
		}
		return p_pngsave_buffer(img, out, outlen, "compression", 6, "strip", 1, NULL);
	case SHIM_WEBP:
		if (p->lossless) {
			return p_webpsave_buffer(img, out, outlen, "lossless", 1, "strip", 1, "effort", 2, NULL);
		}
		return p_webpsave_buffer(img, out, outlen, "Q", p->quality, "strip", 1, "effort", 2, NULL);
	case SHIM_AVIF:
		// Chroma subsampled (4:2:0) whatever the quality: the encoder's
		// memory for a full-resolution 4:4:4 frame is a third more, and the
		// compression API encodes the result once more anyway.
		return p_heifsave_buffer(img, out, outlen, "Q", p->quality, "compression", 4, "effort", 2,
			"subsample_mode", 1, "strip", 1, NULL);
	}
	return -1;
}

// strip drops every metadata field a saver could write back: the result
// carries no metadata but what the job keeps (added after the upstream
// call), and 8.14's webpsave writes EXIF even with strip set. Orientation
// is gone too: thumbnail applied it to the pixels.
static void strip(VipsImage *img) {
	char **names = p_get_fields(img);
	for (char **n = names; n && *n; n++) {
		if (!strncmp(*n, "exif-", 5) || !strcmp(*n, "xmp-data") || !strcmp(*n, "iptc-data") ||
				!strcmp(*n, "orientation")) {
			p_remove(img, *n);
		}
	}
	p_strfreev(names);
}

static long long now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// on_eval is libvips' progress hook on the image being saved: past the
// run's deadline it kills the computation, and the save fails.
static void on_eval(VipsImage *img, void *progress, void *user) {
	(void)progress;
	const long long *deadline = user;
	if (now_ms() > *deadline) {
		p_image_set_kill(img, 1);
	}
}

// prepare is every path's pipeline up to the encoder: decode with
// shrink-on-load, orient, resize and crop to p's box (thumbnail), flatten
// on p's background when asked, and drop the metadata (strip). *out is a
// new reference; the intermediate images live on inside it.
static char *prepare_image(VipsImage *in, void *buf, size_t len, const shim_params *p, VipsImage **out) {
	VipsImage *img = NULL, *flat = NULL, *bare = NULL, *final;
	*out = NULL;
	// fail_on: a truncated image is an error, not grey pixels where it ends.
	int rc = in
		? p_thumbnail_image(in, &img, p->width, "height", p->height, "size", p->size, "crop", p->crop, NULL)
		: p_thumbnail_buffer(buf, len, &img, p->width, "height", p->height, "size", p->size,
			"crop", p->crop, "option_string", "fail_on=truncated", NULL);
	if (rc) goto fail;
	final = img;
	if (p->flatten && p_hasalpha(img)) {
		void *bg = p_array_double_new(p->background, 3);
		rc = p_flatten(img, &flat, "background", bg, NULL);
		p_area_unref(bg);
		if (rc) goto fail;
		final = flat;
	}
	if (p_copy(final, &bare, NULL)) goto fail;
	strip(bare);
	*out = bare;
	if (flat) p_object_unref(flat);
	p_object_unref(img);
	return NULL;
fail:
	if (flat) p_object_unref(flat);
	if (img) p_object_unref(img);
	char *err = errcopy();
	p_error_clear();
	return err;
}

// save_within encodes img as p asks, killed p->budget_ms after start
// (r->killed set); an encoder that works after the pixels are computed
// (AVIF, WebP) runs to its end.
static char *save_within(VipsImage *img, const shim_params *p, long long start, shim_result *r) {
	long long deadline = start + p->budget_ms;
	r->width = p_get_width(img);
	r->height = p_get_height(img);
	if (p->budget_ms > 0) {
		p_image_set_progress(img, 1);
		p_signal_connect_data(img, "eval", (void (*)(void))on_eval, &deadline, NULL, 0);
	}
	if (save(img, p, &r->data, &r->len)) {
		r->killed = p->budget_ms > 0 && now_ms() > deadline;
		char *err = errcopy();
		p_error_clear();
		return err;
	}
	return NULL;
}

// shim_transform is prepare and save in one call, so no libvips object
// outlives the caller's buffer.
char *shim_transform(void *buf, size_t len, const shim_params *p, shim_result *r) {
	long long start = now_ms();
	VipsImage *img = NULL;
	char *err = prepare_image(NULL, buf, len, p, &img);
	if (!err) err = save_within(img, p, start, r);
	if (img) p_object_unref(img);
	return err;
}

// prepared_in_memory is prepare with its pixels computed into memory
// (*out, released with shim_unref).
static char *prepared_in_memory(VipsImage *in, void *buf, size_t len, const shim_params *p, void **out, int *width, int *height) {
	VipsImage *img = NULL, *mem = NULL;
	*out = NULL;
	char *err = prepare_image(in, buf, len, p, &img);
	if (err) return err;
	mem = p_image_copy_memory(img);
	p_object_unref(img);
	if (!mem) {
		err = errcopy();
		p_error_clear();
		return err;
	}
	*out = mem;
	*width = p_get_width(mem);
	*height = p_get_height(mem);
	return NULL;
}

// shim_decode is prepare into memory (*handle): an image encoded many
// times (a fit search's candidates, a set's variants) without decoding
// again.
char *shim_decode(void *buf, size_t len, const shim_params *p, void **handle, int *width, int *height) {
	return prepared_in_memory(NULL, buf, len, p, handle, width, height);
}

// shim_variant makes one variant of a set from the set's decoded source
// (shim_decode's handle, read-only here, so variants run on threads of
// their own): prepare from the pixels in memory, then save.
char *shim_variant(void *handle, const shim_params *p, shim_result *r) {
	long long start = now_ms();
	VipsImage *img = NULL;
	char *err = prepare_image(handle, NULL, 0, p, &img);
	if (!err) err = save_within(img, p, start, r);
	if (img) p_object_unref(img);
	return err;
}

void shim_free(void *p) { p_g_free(p); }

// shim_scale resizes a decoded image by scale into memory (*out).
char *shim_scale(void *handle, double scale, void **out, int *width, int *height) {
	VipsImage *small = NULL, *mem = NULL;
	*out = NULL;
	if (p_resize(handle, &small, scale, NULL)) goto fail;
	if (!(mem = p_image_copy_memory(small))) goto fail;
	p_object_unref(small);
	*out = mem;
	*width = p_get_width(mem);
	*height = p_get_height(mem);
	return NULL;
fail:
	if (small) p_object_unref(small);
	char *err = errcopy();
	p_error_clear();
	return err;
}

// shim_encode encodes a decoded image with p's format and quality.
char *shim_encode(void *handle, const shim_params *p, shim_result *r) {
	if (save(handle, p, &r->data, &r->len)) {
		char *err = errcopy();
		p_error_clear();
		return err;
	}
	r->width = p_get_width(handle);
	r->height = p_get_height(handle);
	return NULL;
}

// shim_resize_to is a decoded image resized to exactly width×height, into
// memory (*out): the reference a smaller result is scored against.
char *shim_resize_to(void *handle, int width, int height, void **out, int *outw, int *outh) {
	shim_params p;
	memset(&p, 0, sizeof(p));
	p.width = width;
	p.height = height;
	p.size = 3; // VIPS_SIZE_FORCE
	return prepared_in_memory(handle, NULL, 0, &p, out, outw, outh);
}

// shim_pixels copies a decoded image's pixels as 8-bit sRGB (alpha kept),
// rows packed, into *out (released with shim_free): what a score reads.
char *shim_pixels(void *handle, void **out, size_t *len, int *width, int *height, int *bands) {
	VipsImage *srgb = NULL, *u8 = NULL;
	*out = NULL;
	if (p_colourspace(handle, &srgb, 22 /* VIPS_INTERPRETATION_sRGB */, NULL)) goto fail;
	if (p_cast(srgb, &u8, 0 /* VIPS_FORMAT_UCHAR */, NULL)) goto fail;
	if (!(*out = p_write_to_memory(u8, len))) goto fail;
	*width = p_get_width(u8);
	*height = p_get_height(u8);
	*bands = p_get_bands(u8);
	p_object_unref(u8);
	p_object_unref(srgb);
	return NULL;
fail:
	if (u8) p_object_unref(u8);
	if (srgb) p_object_unref(srgb);
	char *err = errcopy();
	p_error_clear();
	return err;
}

void shim_unref(void *handle) { if (handle) p_object_unref(handle); }
