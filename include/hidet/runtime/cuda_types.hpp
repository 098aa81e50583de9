// The CUDA driver API's opaque handle types, declared exactly as <cuda.h> declares them (a
// typedef may be repeated), so that public headers can name streams, events, modules and
// functions without including <cuda.h>. Either header may come first.
#pragma once

typedef struct CUctx_st *CUcontext;   ///< a context (<cuda.h>)
typedef struct CUmod_st *CUmodule;    ///< a loaded module (<cuda.h>)
typedef struct CUfunc_st *CUfunction; ///< a kernel of a module (<cuda.h>)
typedef struct CUevent_st *CUevent;   ///< an event (<cuda.h>)
typedef struct CUstream_st *CUstream; ///< a stream (<cuda.h>)
