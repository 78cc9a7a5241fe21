"""torch.ldexp result dtype: Inductor keeps the mantissa's dtype instead of promoting both operands."""
import torch


def fn(m_bool, e_half, m_half, e_float):
    # eager: bool x fp16 -> fp16, fp16 x fp32 -> fp32
    return torch.ldexp(m_bool, e_half), torch.ldexp(m_half, e_float)


def inputs():
    return (
        torch.ones(3, 4, dtype=torch.bool),
        torch.randn(3, 4).half(),
        torch.randn(3, 4).half(),
        torch.randn(3, 4),
    )
