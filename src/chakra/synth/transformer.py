"""The small transformer whose training step is synthesised: host op trees and their kernels.

A layer is a sequence of :class:`LayerOp` (one autograd node each): its forward host-op tree
(PyTorch nesting, innermost ops launch kernels) and the children of its backward node.
"""

from __future__ import annotations

import msgspec

HIDDEN = 1024
TOKENS = 4096  # batch x sequence
HEADS = 16
FFN = 4 * HIDDEN

#: An op argument: ("Tensor(float)", shape), ("GenericList[Tensor(float)]", (shape, ...)),
#: or a scalar (type name, value).
Arg = tuple


class Kernel(msgspec.Struct, frozen=True, gc=False):
    """A GPU kernel launch: kernel name, typical duration (µs) and the API launching it."""

    name: str
    base_us: float
    api: str = "cudaLaunchKernel"


class OpTree(msgspec.Struct, frozen=True):
    """A host op with its children (entered in order) and, if innermost, its kernels."""

    name: str
    schema: str = ""
    inputs: tuple = ()
    children: tuple = ()
    kernels: tuple = ()


class LayerOp(msgspec.Struct, frozen=True):
    """One autograd node: forward tree, backward node name and children, weight count."""

    forward: OpTree
    backward: str
    backward_children: tuple = ()
    weights: int = 0


def _t(*shape: int) -> Arg:
    return ("Tensor(float)", shape)


_GEMM = "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"  # noqa: E501
_GEMM_NN = "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x256x32_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"  # noqa: E501
_BMM = "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4::Params)"  # noqa: E501
ADD_KERNEL = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)"  # noqa: E501
_LN = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, float const*, float const*, float*, float*, float*)"  # noqa: E501
_LN_BWD = "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<float, float>(float const*, float const*, float const*, float const*, float const*, float*, int)"  # noqa: E501
_LN_GB = "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<float, float>(long, long, float const*, float const*, float const*, float const*, float*, float*)"  # noqa: E501
_SOFTMAX = "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>(float*, float const*, int, int, int, bool const*, int, bool)"  # noqa: E501
_SOFTMAX_BWD = "void (anonymous namespace)::softmax_warp_backward<float, float, float, 10, false, false>(float*, float const*, float const*, int, int, int, bool const*)"  # noqa: E501
_DROPOUT = "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, unsigned int, 1, 4, bool>(at::cuda::detail::TensorInfo<float const, unsigned int>, at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, at::PhiloxCudaState)"  # noqa: E501
_MASKED_SCALE = "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::masked_scale_kernel<bool, float, float>(at::Tensor&, at::Tensor const&, at::Tensor const&, float)::{lambda(float, bool)#1}, at::detail::Array<char*, 3> >(int, at::native::(anonymous namespace)::masked_scale_kernel<bool, float, float>(at::Tensor&, at::Tensor const&, at::Tensor const&, float)::{lambda(float, bool)#1}, at::detail::Array<char*, 3>)"  # noqa: E501
_REDUCE = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)"  # noqa: E501
_GELU_BWD = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float, float)#1}, at::detail::Array<char*, 3> >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float, float)#1}, at::detail::Array<char*, 3>)"  # noqa: E501
TRITON_GELU = "triton_poi_fused_gelu_0"
MULTI_TENSOR = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float)"  # noqa: E501
LOG_SOFTMAX = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)"  # noqa: E501
LOG_SOFTMAX_BWD = "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*, float const*, float const*, long)"  # noqa: E501
NLL = "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)"  # noqa: E501
NLL_BWD = "void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>(float*, float const*, long const*, float const*, float const*, bool, int, int, long, long)"  # noqa: E501

_X = _t(TOKENS, HIDDEN)


def _linear(out_features: int, in_features: int) -> LayerOp:
    weight = _t(out_features, in_features)
    transpose = OpTree(
        "aten::t",
        "aten::t(Tensor(a) self) -> Tensor(a)",
        (weight,),
        children=(
            OpTree(
                "aten::transpose",
                "aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
                (weight, ("Int", 0), ("Int", 1)),
                children=(OpTree("aten::as_strided", "", (weight,)),),
            ),
        ),
    )
    addmm = OpTree(
        "aten::addmm",
        "aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) "
        "-> Tensor",
        (_t(out_features), _t(TOKENS, in_features), _t(in_features, out_features)),
        kernels=(Kernel(_GEMM, 60.0, "cudaLaunchKernelExC"),),
    )
    forward = OpTree(
        "aten::linear",
        "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
        (_t(TOKENS, in_features), weight, _t(out_features)),
        children=(transpose, addmm),
    )
    mm = "aten::mm(Tensor self, Tensor mat2) -> Tensor"
    backward = (
        OpTree(
            "aten::mm", mm, (_t(TOKENS, out_features), weight), kernels=(Kernel(_GEMM_NN, 55.0),)
        ),
        OpTree("aten::mm", mm, (_t(out_features, TOKENS), _X), kernels=(Kernel(_GEMM, 58.0),)),
        OpTree(
            "aten::sum",
            "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, "
            "ScalarType? dtype=None) -> Tensor",
            (_t(TOKENS, out_features),),
            kernels=(Kernel(_REDUCE, 9.0),),
        ),
    )
    return LayerOp(forward, "AddmmBackward0", backward, weights=2)


def _single(name: str, schema: str, kernel: Kernel, inputs: tuple = (_X,)) -> OpTree:
    return OpTree(name, schema, inputs, kernels=(kernel,))


def _layer_norm() -> LayerOp:
    native = _single("aten::native_layer_norm", "", Kernel(_LN, 8.0))
    forward = OpTree("aten::layer_norm", "", (_X, ("GenericList[Int]", [HIDDEN])), (native,))
    backward = (
        OpTree(
            "aten::native_layer_norm_backward",
            "",
            (_X, _X),
            kernels=(Kernel(_LN_BWD, 10.0), Kernel(_LN_GB, 6.0)),
        ),
    )
    return LayerOp(forward, "NativeLayerNormBackward0", backward, weights=2)


def _bmm() -> LayerOp:
    scores = _t(HEADS, TOKENS // HEADS, TOKENS // HEADS)
    bmm = _single("aten::bmm", "aten::bmm(Tensor self, Tensor mat2) -> Tensor", Kernel(_BMM, 40.0))
    forward = OpTree("aten::matmul", "", (scores, scores), (bmm,))
    backward = (
        _single("aten::bmm", "aten::bmm(Tensor self, Tensor mat2) -> Tensor", Kernel(_BMM, 41.0)),
        _single("aten::bmm", "aten::bmm(Tensor self, Tensor mat2) -> Tensor", Kernel(_BMM, 39.0)),
    )
    return LayerOp(forward, "BmmBackward0", backward)


def transformer_layer() -> tuple[LayerOp, ...]:
    """The autograd nodes of one layer's forward pass, in execution order."""
    softmax = LayerOp(
        OpTree(
            "aten::softmax",
            "",
            (_X, ("Int", -1)),
            (_single("aten::_softmax", "", Kernel(_SOFTMAX, 15.0)),),
        ),
        "SoftmaxBackward0",
        (_single("aten::_softmax_backward_data", "", Kernel(_SOFTMAX_BWD, 14.0)),),
    )
    dropout = LayerOp(
        OpTree(
            "aten::dropout",
            "",
            (_X, ("Double", 0.1), ("Bool", True)),
            (_single("aten::native_dropout", "", Kernel(_DROPOUT, 10.0)),),
        ),
        "NativeDropoutBackward0",
        (_single("aten::native_dropout_backward", "", Kernel(_MASKED_SCALE, 8.0)),),
    )
    add_schema = "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    add = LayerOp(
        _single("aten::add", add_schema, Kernel(ADD_KERNEL, 6.0), (_X, _X)), "AddBackward0"
    )
    gelu = LayerOp(
        OpTree(TRITON_GELU, "", (_X,), kernels=(Kernel(TRITON_GELU, 12.0, "cuLaunchKernel"),)),
        "GeluBackward0",
        (_single("aten::gelu_backward", "", Kernel(_GELU_BWD, 9.0), (_X, _X)),),
    )
    return (
        _layer_norm(),
        _linear(3 * HIDDEN, HIDDEN),
        _bmm(),
        softmax,
        dropout,
        _bmm(),
        _linear(HIDDEN, HIDDEN),
        add,
        _layer_norm(),
        _linear(FFN, HIDDEN),
        gelu,
        _linear(HIDDEN, FFN),
        add,
    )


def loss_op() -> LayerOp:
    """Cross-entropy over the vocabulary: the last forward node, first backward one."""
    logits = _t(TOKENS, HIDDEN)
    forward = OpTree(
        "aten::cross_entropy_loss",
        "",
        (logits, ("Tensor(long)", (TOKENS,))),
        (
            OpTree(
                "aten::log_softmax",
                "",
                (logits,),
                (_single("aten::_log_softmax", "", Kernel(LOG_SOFTMAX, 12.0), (logits,)),),
            ),
            OpTree(
                "aten::nll_loss",
                "",
                (logits,),
                (_single("aten::nll_loss_forward", "", Kernel(NLL, 5.0), (logits,)),),
            ),
        ),
    )
    backward = (
        _single("aten::nll_loss_backward", "", Kernel(NLL_BWD, 6.0), (logits,)),
        _single("aten::_log_softmax_backward_data", "", Kernel(LOG_SOFTMAX_BWD, 12.0), (logits,)),
    )
    return LayerOp(forward, "NllLossBackward0", backward)


def count_kernels(tree: OpTree) -> int:
    """Kernels launched by ``tree`` and its descendants (iterative walk)."""
    total, pending = 0, [tree]
    while pending:
        node = pending.pop()
        total += len(node.kernels)
        pending.extend(node.children)
    return total


def layer_gpu_ops(layer: tuple[LayerOp, ...]) -> int:
    """GPU ops of one layer's forward and backward (AccumulateGrad adds one per weight)."""
    return sum(
        count_kernels(op.forward) + sum(count_kernels(c) for c in op.backward_children) + op.weights
        for op in layer
    )
