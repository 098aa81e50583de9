// Graph passes: FlowGraph in, FlowGraph out.
//
// fuse_operators: every injective operator defined by a compute definition (element-wise math,
// broadcasts, casts, transposes, ...) whose single output feeds exactly one other such operator,
// and is not a graph output, is fused into that consumer as a prologue (ops/fuse.hpp): its
// element definition is inlined into the consumer's kernels, so the intermediate tensor is never
// written. Chains fuse transitively (add -> relu -> sum becomes one node, one kernel: FusedSum).
// A cast read by several task-defined operators is made again for each, so that it fuses into
// each of them (RMSNorm's x.to(f32), read twice, joins the norm's kernel), and so is an
// element-wise value whose readers meet in one kernel (PoolFormer's group norm, read by the
// pooling and by the subtraction after it, is computed inside the pooling's kernel).
// A fused node prints as Hidet's do:
//   x_1: float32[4][cuda] = FusedSum(x, c, fused_graph=FlowGraph(Add, Relu, Sum), anchor=2)
// Operators with hand-written templates (Matmul, Conv2d, ScaledDotProductAttention) and views
// (Reshape) are left as they are.
//
// simplify_reshapes: chains of Reshape collapse to one, and a Reshape to its input's own shape
// disappears. fold_conv_batch_norm: Conv2d followed by an inference BatchNorm becomes one Conv2d
// with folded weights and bias, and a product by constant weights viewed [M, N] followed by one
// (LeViT's LinearNorm) a product by scaled weights plus a bias.
//
// fuse_epilogues: the injective operators after a Matmul or a Conv2d join its template's kernel
// as an epilogue, stored at the product's store (x_2 = FusedMatmul(x, w, b, fused_graph=FlowGraph(
// Matmul, Add, Gelu), anchor=0)).
//
// fuse_attention: attention written out of matmuls and a softmax becomes one attention node
// (rewrite rules of the pattern language, graph/pattern.hpp). eliminate_common_subexpressions:
// an operator applied again to the same inputs reuses the first result.
//
// convert_precision: f32 matmuls, convolutions and attention compute in f16 or bf16 (mixed
// precision, PassContext::mixed_precision), their outputs cast back to f32. quantize_weights_int8
// (PassContext::weight_only_int8): products by constant weights read them as int8.
//
// convert_layout_nhwc: half-precision convolutions run channels-last, values stay so between
// them, permutes only at the borders.
//
// optimize(graph, ctx) runs the passes in order (simplify_reshapes, fuse_attention,
// eliminate_common_subexpressions, fold_residual_into_all_reduce, fold_conv_batch_norm,
// merge_sibling_matmuls, lift_sibling_slices, slices_as_views, convert_precision when
// ctx.mixed_precision is set, convert_layout_nhwc unless ctx.layout_nhwc is false,
// fuse_epilogues, fuse_operators, then bind_kernel_options when ctx.tensor_cores, ctx.parallel_k
// or ctx.reduce_precision differ from the defaults) and returns the new graph; the input graph is not changed. The PassContext's instruments save the graph after each
// pass (printed form and DOT, for diffing what a pass did) and log each pass.
//
// Definitions, by family: graph/impl/passes_rewrite.ipp (simplify_reshapes, fuse_attention,
// eliminate_common_subexpressions, fold_residual_into_all_reduce, fold_conv_batch_norm), passes_siblings.ipp (sibling matmuls
// and slices), passes_layout.ipp (convert_precision, convert_layout_nhwc, bind_kernel_options),
// passes_fusion.ipp (fuse_epilogues, fuse_operators) and passes.ipp (verify, optimize). Each
// rebuilds the graph with one helper (graph/detail/rewriter.hpp) and tests operator kinds
// through ops::OpKind (ops/op_kind.hpp).
#pragma once

#include <optional>
#include <string>

#include "hidet/graph/flow_graph.hpp"
#include "hidet/graph/pattern.hpp"
#include "hidet/ops/tuning.hpp"

namespace hidet::graph {

/// Options and instruments of graph::optimize.
struct PassContext {
  /// Mixed precision: when set (f16 or bf16), f32 Matmul, Conv2d and ScaledDotProductAttention
  /// nodes compute in this dtype on the tensor cores (f32 accumulation inside the templates):
  /// their inputs are cast (constants once, when optimizing) and their outputs cast back to f32,
  /// which the epilogue then stores; everything else stays f32 (convert_precision).
  std::optional<DataType> mixed_precision;
  /// When set: the input graph is written to <dir>/0_input.txt (and .dot), the graph after pass k
  /// to <dir>/<k>_<pass>.txt (and .dot). The folder is created; a write failure is a ValueError.
  std::string save_graph_dir;
  /// Log each pass on stderr: its name, operators before and after, milliseconds.
  bool verbose = false;
  /// Run convolutions channels-last where it pays (convert_layout_nhwc).
  bool layout_nhwc = true;
  /// Check the graph after each pass (graph::verify); a broken graph is a ValueError naming the
  /// pass and the node.
  bool verify = true;
  /// f16/bf16 matmuls on the tensor cores; false: on the CUDA cores (option::KernelOptions;
  /// bind_kernel_options).
  bool tensor_cores = true;
  /// Split-k of matmuls: 0 the templates' heuristics, 1 never, k > 1 in k slices where a template
  /// can (option::KernelOptions; bind_kernel_options).
  int parallel_k = 0;
  /// Reduce precision (Hidet's set_reduce_precision): f16 makes f16 matmuls accumulate in f16 on
  /// the tensor cores (the mma.sync template; option::KernelOptions::f16_accumulation; bind_kernel_options).
  /// Unset or f32: f32 accumulators. Other reductions (sums, softmax, norms), convolutions,
  /// attention and bf16 products keep f32 accumulators. optimize() refuses other dtypes.
  std::optional<DataType> reduce_precision;
  /// For graphs with symbolic input extents: optimize once on the symbols and reuse the
  /// shape-generic kernels across shapes (DispatchOptions::shape_generic); off: specialize,
  /// optimize and compile each shape.
  bool shape_generic = false;
  /// Weight-only int8: products of f16/bf16 activations by constant weights read the weights as
  /// int8 with per-column scales (quantize_weights_int8): half the bytes of a decoding step.
  bool weight_only_int8 = false;
};

/// Checks that `graph` is well formed: every symbolic input of a node is a graph input or an
/// output of an earlier node with the producer's recorded shape and dtype; constants hold data;
/// a task-defined node's inputs and outputs have its task's shapes and dtypes; outputs are graph
/// tensors. Throws ValueError naming the node and the input.
void verify(const FlowGraph &graph);

/// Reshape simplification: a Reshape of a Reshape reads the first one's input, and a Reshape to
/// its input's own shape is dropped (its readers read the input). Arithmetic that leaves its
/// operand as it is (x + 0, x - 0, x * 1, x / 1 with a small constant of zeros or ones, the
/// result of x's dtype and element count: a decoding step's cache position past + arange(1))
/// becomes x, reshaped to the result's shape (a view: no kernel).
FlowGraph simplify_reshapes(const FlowGraph &graph);

/// Attention written out (Matmul(q, Permute(k)) [* or / a scalar] [+ mask] -> Softmax(last axis)
/// -> Matmul(., v), q, k, v of rank 4) becomes one ScaledDotProductAttention node (the
/// flash-attention template for f16/bf16 with head dims 32, 64 and 128); so does Swin's
/// shifted-window form (scores + a constant bias, viewed per window, + a constant window mask,
/// viewed back: the constants become one additive mask, computed when optimizing). A constant
/// scaling of q before the product (q * c, q / c) joins the attention's scale, and an attention
/// node whose output is permuted to [B, Sq, H, D] (merging the heads) stores that layout itself
/// (ops::scaled_dot_product_attention_heads_last); attention over k and v repeated per q head
/// (grouped-query attention written as transformers' repeat_kv: Reshape, BroadcastTo, Reshape)
/// reads the unrepeated k and v instead; declared as rewrite rules in the pattern language
/// (graph/pattern.hpp). attention_rules() lists them.
FlowGraph fuse_attention(const FlowGraph &graph);
std::vector<RewriteRule> attention_rules();

/// Common subexpressions: a task-defined operator (by its kernel key), Matmul, Conv2d or Reshape
/// applied again to the same inputs with the same attributes reuses the first one's outputs.
/// Opaque operators (apply_operator) are left alone.
FlowGraph eliminate_common_subexpressions(const FlowGraph &graph);

/// The residual add after a sum all-reduce (a row-parallel product's partial sums reduced, then
/// the block's input added: y = all_reduce(h) + r) done before it on rank 0 alone (y =
/// all_reduce(h + r) there, all_reduce(h) on the other ranks): the add then joins the product's
/// kernel as an epilogue, and the reduced value is the result, where it was a kernel of its own
/// after the collective on every rank. Applies where the add is the all-reduce's one reader, has
/// its shape and dtype, and r (of that dtype, broadcast to it) comes before the collective in the
/// node order. The sum's rounding differs from the unfolded one's by the order of the additions.
FlowGraph fold_residual_into_all_reduce(const FlowGraph &graph);

/// Folds an inference batch_norm into the conv2d (NCHW) that feeds it: w' = w * s, b' = (b - mean)
/// * s + beta with s = gamma / sqrt(var + eps) per output channel, computed once on the
/// constants (on the host, in double precision). Applies when the conv2d's output is read only by the batch_norm and the weights,
/// biases and statistics are constants. Likewise a Matmul by constant weights w [K, N] whose output,
/// viewed [M, N], feeds only the batch_norm (BatchNorm1d(linear(x).flatten(0, 1))): w's columns are
/// scaled and the shift becomes a bias added to the product.
FlowGraph fold_conv_batch_norm(const FlowGraph &graph);

/// Sibling matmuls merged: products of one input by constant [K, N] matrices of one width N
/// (a transformer's Q, K and V projections) become one product by the matrices side by side,
/// laid out [G, rows..., N]; a bias Add every sibling has joins it (biases side by side), and the
/// Reshapes and Permutes the siblings share (splitting heads) are applied once with a leading
/// group axis; each sibling's value is then a view (Narrow, Reshape) of the result, no copy.
/// fuse_epilogues later takes the bias and the layout changes into the product's kernel.
FlowGraph merge_sibling_matmuls(const FlowGraph &graph);
/// One-row products merged whatever their widths: products of one input of a single row (a
/// decoding step at batch 1) by constant [K, N_i] weights of its dtype become one product by the
/// weights side by side, each member's value a view of its columns (contiguous in a single row):
/// grouped-query attention's Q projection joins its K and V (one kernel reads all three weights).
/// Members start on 256-byte boundaries; a product whose value would take an epilogue
/// (fuse_epilogues: a bias, an activation, a residual add) stays alone.
FlowGraph merge_row_products(const FlowGraph &graph);
/// Sibling slices lifted: equal slices of one tensor along its last axis that cover it (a fused
/// QKV projection split into Q, K and V, as GPT-2 does), each going through the same Reshapes
/// and Permutes (splitting heads), become one Reshape and Permute of the whole tensor with a
/// leading group axis and a view (Narrow, Reshape) per slice: the tensor is then read once, and
/// fuse_epilogues stores the heads' layout from its producer's kernel (no kernel per slice).
FlowGraph lift_sibling_slices(const FlowGraph &graph);
/// Contiguous slices as views: a Slice whose elements are one contiguous run of its input (steps
/// 1; every axis before the last sliced one has extent 1 in the result: q, k, v = qkv[0], qkv[1],
/// qkv[2] of a [3, ...] tensor, as Swin and ViT write it) becomes a view (Reshape, Narrow,
/// Reshape) of an operator's output when the run starts on a 256-byte boundary (the allocator's
/// alignment, which the kernels reading it may assume). Its reader then reads the producer's
/// output in place instead of a copy made by a kernel of its own. Slices of graph inputs, slices
/// that are graph outputs, and slices read (through Reshapes) by one element-wise operator alone,
/// which fuse into that operator's kernel (torch.roll's slices and concat), stay.
FlowGraph slices_as_views(const FlowGraph &graph);
/// Weight-only int8 quantization (PassContext::weight_only_int8): every Matmul of an f16/bf16
/// input by a constant [K, N] weight of its dtype (K and N at least 64) reads the weight as int8,
/// quantized per column (symmetric: scale = max |w[:, n]| / 127, q = round(w / scale), computed
/// on the device when optimizing), and multiplies by the f32 scales after the product
/// (Cast(Mul(Matmul(x, q), scale), dtype): fuse_epilogues takes both into the product's kernel).
/// ops::matmul runs an int8 weight on the few-rows kernel (templates/matmul_gemv.hpp) for up to 8
/// rows and converts it to the activations' dtype for more.
FlowGraph quantize_weights_int8(const FlowGraph &graph);
/// Mixed precision (see PassContext::mixed_precision): f32 Matmul, Conv2d and
/// ScaledDotProductAttention nodes compute in `dtype` (f16 or bf16; else a ValueError). A cast of
/// a tensor read by several of them is made once.
FlowGraph convert_precision(const FlowGraph &graph, DataType dtype);

/// Channels-last convolutions where they pay: every NCHW Conv2d of f16/bf16 with constant
/// weights and C / groups a multiple of 4 becomes a Conv2dNhwc (the tensor-core template's fast
/// layout, read in place; weights permuted once, when optimizing), and a patch embedding over
/// other channel counts (window = stride, no padding, C * KH * KW a multiple of 8: ViT's
/// 16 x 16 / 16 of the 3-channel image) a Matmul of a permuted copy of x, its rows the output's
/// pixels channels-last. Values stay channels-last between such convolutions through Relu, Sigmoid, Cast,
/// same-shape Add, Sub and Mul, max and average pooling (MaxPool2dNhwc, AvgPool2dNhwc) and any
/// other element-wise operator (computed on NCHW views and turned back: fusion folds the
/// permutes into its kernel); a Permute turns a value to NCHW only where an operator needs it (a
/// reduction, a graph output, ...) and to NHWC where a convolution reads an NCHW value. The
/// Permutes join epilogues like any injective operator.
FlowGraph convert_layout_nhwc(const FlowGraph &graph);

/// Epilogue fusion (ops/epilogue.hpp): a Matmul or Conv2d whose output is read once by an
/// injective task-defined operator (or a Reshape) takes that operator, and the ones after it
/// while each result is read once, into its template's kernel as an epilogue: one FusedMatmul
/// (FusedConv2d) node whose inputs are the anchor's and the chain's other inputs. Outputs of the
/// graph and symbolic shapes end a chain.
FlowGraph fuse_epilogues(const FlowGraph &graph);

/// Prologue fusion of injective task-defined operators (see the top of the file).
FlowGraph fuse_operators(const FlowGraph &graph);

/// Binds kernel options (tensor cores, split-k: option::KernelOptions) to every Matmul and
/// FusedMatmul node: the node runs, builds and tunes its kernels under them wherever the graph
/// runs (compiled graphs, CUDA graphs, profiles), and prints them among its attributes. The
/// last pass of optimize() when PassContext::tensor_cores or parallel_k differ from the defaults.
FlowGraph bind_kernel_options(const FlowGraph &graph, const option::KernelOptions &options);
/// The optimization pipeline (see the top of the file).
FlowGraph optimize(const FlowGraph &graph, const PassContext &ctx = {});
/// The passes of optimize() that work on symbolic extents, in its order: simplify_reshapes,
/// fuse_attention, eliminate_common_subexpressions, fold_residual_into_all_reduce,
/// fold_conv_batch_norm, convert_precision (when
/// ctx.mixed_precision is set), convert_layout_nhwc (unless ctx.layout_nhwc is false),
/// fuse_epilogues (products and convolutions of symbolic extents keep their chains as steps,
/// made epilogues over the symbols per run) and fuse_operators (fused tasks stay shape-generic),
/// then bind_kernel_options as optimize() does. Not merge_sibling_matmuls and the slice passes
/// (constant shapes only). What ShapeDispatch's shape_generic mode compiles per shape.
FlowGraph optimize_shape_generic(const FlowGraph &graph, const PassContext &ctx = {});

} // namespace hidet::graph

#if HIDET_HEADER_ONLY
#include "hidet/graph/impl/passes.ipp"
#include "hidet/graph/impl/passes_fusion.ipp"
#include "hidet/graph/impl/passes_layout.ipp"
#include "hidet/graph/impl/passes_rewrite.ipp"
#include "hidet/graph/impl/passes_siblings.ipp"
#endif
