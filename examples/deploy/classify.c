/* Step 2 of the deployment example, in C: the same as classify.cpp through hidet's C ABI
 * (hidet/c_api.h), as a Rust, Go or C# program would call it: load a model file that
 * export_model.py wrote, run it on one image in device memory, print the top-5 classes.
 *
 *   ./classify_c model.hidet [input.bin]   (input: raw values of the model's input dtype, NCHW;
 *                                           default: a synthetic image)
 */
#include <hidet/c_api.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints the last error and fails when a call did not succeed. */
#define CHECK(call)                                                                                \
  do {                                                                                             \
    hidet_status status_ = (call);                                                                 \
    if (status_ != HIDET_OK) {                                                                     \
      fprintf(stderr, "classify_c: %s (status %d)\n", hidet_last_error(), (int)status_);           \
      goto fail;                                                                                   \
    }                                                                                              \
  } while (0)

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  float f;
  if (exp == 0x1f)
    bits = sign | 0x7f800000u | (man << 13); /* inf, nan */
  else if (exp != 0)
    bits = sign | ((exp + 112) << 23) | (man << 13);
  else { /* zero and subnormals: man * 2^-24 */
    f = (float)man * 5.9604645e-8f;
    return sign ? -f : f;
  }
  memcpy(&f, &bits, sizeof f);
  return f;
}

static uint16_t float_to_half(float f) { /* round to nearest even; enough for a synthetic image */
  uint32_t x, sign, exp, man;
  memcpy(&x, &f, sizeof x);
  sign = (x >> 16) & 0x8000u;
  exp = (x >> 23) & 0xff;
  man = x & 0x7fffffu;
  if (exp < 113) return (uint16_t)sign; /* |f| < 2^-14: flushed */
  if (exp > 142) return (uint16_t)(sign | 0x7c00u);
  {
    uint32_t h = ((exp - 112) << 10) | (man >> 13), rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) ++h;
    return (uint16_t)(sign | h);
  }
}

static size_t dtype_size(hidet_dtype d) {
  switch (d) {
  case HIDET_FLOAT64:
  case HIDET_INT64:
  case HIDET_UINT64:
    return 8;
  case HIDET_FLOAT32:
  case HIDET_INT32:
  case HIDET_UINT32:
    return 4;
  case HIDET_FLOAT16:
  case HIDET_BFLOAT16:
  case HIDET_INT16:
  case HIDET_UINT16:
    return 2;
  default:
    return 1;
  }
}

int main(int argc, char **argv) {
  hidet_model *model = NULL;
  hidet_tensor_info in_info, out_info;
  int64_t in_shape[8], out_shape[8];
  size_t in_bytes, out_bytes, numel = 1, classes, i, k;
  void *host_in = NULL, *host_out = NULL, *dev_in = NULL, *dev_out = NULL;
  float *probs = NULL;
  const char *target = "";
  hidet_tensor x, y;
  int rc = 1;
  double top, sum = 0;

  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s MODEL_FILE [INPUT_FILE]\n", argv[0]);
    return 2;
  }
  CHECK(hidet_model_load(argv[1], &model));
  CHECK(hidet_model_target(model, &target));
  CHECK(hidet_model_input_info(model, 0, &in_info));
  CHECK(hidet_model_output_info(model, 0, &out_info));
  if (in_info.ndim > 8 || out_info.ndim > 8 || out_info.dtype != in_info.dtype ||
      (in_info.dtype != HIDET_FLOAT32 && in_info.dtype != HIDET_FLOAT16)) {
    fprintf(stderr,
            "classify_c: this example takes a float32 or float16 model of at most 8 dimensions\n");
    goto fail;
  }
  for (i = 0; i < (size_t)in_info.ndim; ++i) {
    in_shape[i] = in_info.shape[i] < 0 ? 1 : in_info.shape[i]; /* a batch of one */
    numel *= (size_t)in_shape[i];
  }
  in_bytes = numel * dtype_size(in_info.dtype);
  host_in = malloc(in_bytes);
  if (!host_in) goto fail;
  if (argc > 2) {
    FILE *f = fopen(argv[2], "rb");
    size_t got = f ? fread(host_in, 1, in_bytes, f) : 0;
    int extra = f ? fgetc(f) : EOF;
    if (f) fclose(f);
    if (got != in_bytes || extra != EOF) {
      fprintf(stderr, "classify_c: '%s' does not hold %zu bytes (the model's input)\n", argv[2],
              in_bytes);
      goto fail;
    }
  } else {
    for (i = 0; i < numel; ++i) {
      float v = sinf(0.01f * (float)i);
      if (in_info.dtype == HIDET_FLOAT16)
        ((uint16_t *)host_in)[i] = float_to_half(v);
      else
        ((float *)host_in)[i] = v;
    }
  }
  x.data = NULL, x.dtype = in_info.dtype, x.ndim = in_info.ndim, x.shape = in_shape;
  CHECK(hidet_model_output_shape(model, &x, 1, 0, out_shape));
  numel = 1;
  for (i = 0; i < (size_t)out_info.ndim; ++i)
    numel *= (size_t)out_shape[i];
  out_bytes = numel * dtype_size(out_info.dtype);
  classes = (size_t)out_shape[out_info.ndim - 1];

  CHECK(hidet_device_malloc(in_bytes, &dev_in));
  CHECK(hidet_device_malloc(out_bytes, &dev_out));
  CHECK(hidet_memcpy_to_device(dev_in, host_in, in_bytes));
  x.data = dev_in;
  y.data = dev_out, y.dtype = out_info.dtype, y.ndim = out_info.ndim, y.shape = out_shape;
  CHECK(hidet_model_run(model, &x, 1, &y, 1, NULL));
  CHECK(hidet_stream_synchronize(NULL));
  host_out = malloc(out_bytes);
  probs = malloc(classes * sizeof(float));
  if (!host_out || !probs) goto fail;
  CHECK(hidet_memcpy_to_host(host_out, dev_out, out_bytes));

  for (i = 0; i < classes; ++i) /* the first image's row */
    probs[i] = out_info.dtype == HIDET_FLOAT16 ? half_to_float(((uint16_t *)host_out)[i])
                                               : ((float *)host_out)[i];
  top = probs[0];
  for (i = 1; i < classes; ++i)
    top = probs[i] > top ? probs[i] : top;
  for (i = 0; i < classes; ++i)
    sum += probs[i] = (float)exp(probs[i] - top);
  k = classes < 5 ? classes : 5;
  printf("%s (%s), input %s: top-%zu classes\n", argv[1], target, in_info.name, k);
  for (i = 0; i < k; ++i) { /* the next largest, each round */
    size_t c, best = 0;
    for (c = 1; c < classes; ++c)
      best = probs[c] > probs[best] ? c : best;
    printf("  class %zu: %.4f\n", best, probs[best] / sum);
    probs[best] = -1;
  }
  rc = 0;
fail:
  hidet_device_free(dev_in);
  hidet_device_free(dev_out);
  free(host_in);
  free(host_out);
  free(probs);
  hidet_model_free(model);
  return rc;
}
