/* The C ABI of hidet: load a model file (hidet.torch.export, hidet::save_model), query its inputs
 * and outputs, run it on device pointers and a CUDA stream, from C or any language with a C
 * foreign-function interface (Rust, Go, C#, ...). It is part of libhidet (link -lhidet; the
 * pkg-config file hidet-c.pc gives the flags for C); it needs no compiler, no NVRTC and no Python
 * at run time: libhidet loads libcuda.so.1 when there is a GPU and runs kernels on its CPU
 * emulator otherwise.
 *
 *   hidet_model *m = NULL;
 *   if (hidet_model_load("resnet50.hidet", &m) != HIDET_OK) {
 *     fprintf(stderr, "%s\n", hidet_last_error());
 *     return 1;
 *   }
 *   int64_t in_shape[4] = {1, 3, 224, 224}, out_shape[2] = {1, 1000};
 *   hidet_tensor x = {x_device_ptr, HIDET_FLOAT32, 4, in_shape};
 *   hidet_tensor y = {y_device_ptr, HIDET_FLOAT32, 2, out_shape};
 *   hidet_model_run(m, &x, 1, &y, 1, stream);   // enqueued on `stream` (a CUstream; NULL: default)
 *   hidet_model_free(m);
 *
 * Every function returns a status; on failure hidet_last_error() gives the message (for this
 * thread, until its next failing call): which argument or input was wrong and what was expected,
 * or why the file cannot be loaded. Bad input never crashes: NULL pointers, indices out of range,
 * inputs of the wrong count, dtype or shape, outputs of the wrong shape, truncated, corrupt or
 * foreign files, files of another hidet version or GPU architecture all give an error code. A
 * model may be run from several threads at once (each run takes its own workspace).
 *
 * "Device" memory is GPU memory on a GPU machine, and host memory when libhidet runs on its CPU
 * emulator; hidet_device_malloc and the copies below work on both.
 */
#ifndef HIDET_C_API_H
#define HIDET_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What a call returns. */
typedef enum hidet_status {
  HIDET_OK = 0,
  HIDET_ERROR_INVALID_ARGUMENT = 1, /**< a NULL pointer, an index out of range, inputs or outputs of
                                       the wrong count, dtype or shape */
  HIDET_ERROR_BAD_FILE = 2, /**< the file cannot be read, is no model file, is truncated or corrupt,
                                 or was saved by another hidet version or for another GPU */
  HIDET_ERROR_CUDA = 3,     /**< the CUDA driver failed */
  HIDET_ERROR_INTERNAL = 4  /**< a bug in hidet: please report the message */
} hidet_status;

/** Element types (the values of hidet's DTypeCode). */
typedef enum hidet_dtype {
  HIDET_BOOL = 0,
  HIDET_INT8 = 1,
  HIDET_INT16 = 2,
  HIDET_INT32 = 3,
  HIDET_INT64 = 4,
  HIDET_UINT8 = 5,
  HIDET_UINT16 = 6,
  HIDET_UINT32 = 7,
  HIDET_UINT64 = 8,
  HIDET_FLOAT16 = 9,
  HIDET_BFLOAT16 = 10,
  HIDET_FLOAT32 = 11,
  HIDET_FLOAT64 = 12,
  HIDET_FLOAT8_E4M3 = 13,
  HIDET_FLOAT8_E5M2 = 14
} hidet_dtype;

/** A loaded model (opaque). */
typedef struct hidet_model hidet_model;

/** An input or output of a model, as the file records it. The pointers stay valid while the
 *  model lives. */
typedef struct hidet_tensor_info {
  const char *name; /**< torch's name of the input or output */
  hidet_dtype dtype;
  int32_t ndim;
  const int64_t *shape;    /**< ndim extents; -1 where the extent varies (the file holds several) */
  const char *const *dims; /**< ndim strings: "" for a constant extent, else its name ("batch") */
  int32_t updated;         /**< inputs: 1 when a run writes the input's new value into it (a cache
                                updated in place), else 0 */
} hidet_tensor_info;

/** A tensor in device memory the caller owns: contiguous, row-major. */
typedef struct hidet_tensor {
  void *data;
  hidet_dtype dtype;
  int32_t ndim;
  const int64_t *shape;
} hidet_tensor;

/** hidet's version, "major.minor.patch". */
const char *hidet_version(void);

/** The message of this thread's last failed call ("" when none failed). */
const char *hidet_last_error(void);

/** Loads the model file at `path` into *model (see the top of the file). */
hidet_status hidet_model_load(const char *path, hidet_model **model);

/** Frees a model (NULL is allowed and does nothing). Runs still in flight on a stream must have
 *  completed. */
hidet_status hidet_model_free(hidet_model *model);

/** The kernels' target: a GPU architecture ("sm_90a") or "emulator". */
hidet_status hidet_model_target(const hidet_model *model, const char **target);

hidet_status hidet_model_num_inputs(const hidet_model *model, size_t *count);
hidet_status hidet_model_num_outputs(const hidet_model *model, size_t *count);
hidet_status hidet_model_input_info(const hidet_model *model, size_t index,
                                    hidet_tensor_info *info);
hidet_status hidet_model_output_info(const hidet_model *model, size_t index,
                                     hidet_tensor_info *info);

/** The shape of output `index` for inputs of the given shapes (their data may be NULL): writes
 *  the output's ndim extents (hidet_model_output_info) to `shape`. */
hidet_status hidet_model_output_shape(const hidet_model *model, const hidet_tensor *inputs,
                                      size_t num_inputs, size_t index, int64_t *shape);

/** Runs the model: reads `inputs`, writes `outputs` (of the shapes hidet_model_output_shape
 *  gives), enqueued on `stream` (a CUstream, NULL for the default stream; on the emulator the run
 *  has completed when the call returns). */
hidet_status hidet_model_run(const hidet_model *model, const hidet_tensor *inputs,
                             size_t num_inputs, const hidet_tensor *outputs, size_t num_outputs,
                             void *stream);

/** Device memory for tensors (see the top of the file). */
hidet_status hidet_device_malloc(size_t nbytes, void **ptr);
/** Frees memory from hidet_device_malloc (NULL does nothing). */
hidet_status hidet_device_free(void *ptr);
/** Synchronous copies between host and device memory (after the default stream's work). */
hidet_status hidet_memcpy_to_device(void *dst, const void *src, size_t nbytes);
hidet_status hidet_memcpy_to_host(void *dst, const void *src, size_t nbytes);
/** Waits for the work on `stream` (NULL: the default stream). */
hidet_status hidet_stream_synchronize(void *stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HIDET_C_API_H */
