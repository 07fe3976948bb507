// Everything of the core in one include.
#pragma once
#include "roofline/device.hpp"
#include "roofline/errors.hpp"
#include "roofline/format.hpp"
#include "roofline/op.hpp"
#include "roofline/ops/attention.hpp"
#include "roofline/ops/linear.hpp"
#include "roofline/ops/pointwise.hpp"
#include "roofline/quant.hpp"
#include "roofline/roofline.hpp"
#include "roofline/version.hpp"
