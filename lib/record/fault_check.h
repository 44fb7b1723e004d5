#pragma once
// --inject-fault (record/run_options.h FaultSpec; a test facility): parse_fault reads the option,
// defined here beside the check that the fault will fire. A fault that never fires (a step past the
// run's end, an element outside its tensor, a tensor the model does not have) would let a test
// that expects a divergence read "identical" as a pass of the auditor; it is refused up front.
#include <string>

#include "data/dataset.h"
#include "record/run_options.h"
#include "spec/spec.h"

namespace ra::record {

// --inject-fault's text as a FaultSpec (record/run_options.h):
// "run=1,step=3,tensor=dense_0.weight,element=5,bit=0" or "run=1,step=3,op=dense_0/dense.forward,
// element=5,bit=0".
FaultSpec parse_fault(const std::string& text);

// Throws InputError (exit 2) naming --inject-fault and the problem when `fault` cannot fire in
// a run of `spec` over `train` (the loaded training set): step outside the planned steps, a
// tensor that is neither "batch" nor a parameter of the model (the message lists them), an
// element outside the parameter, or "batch" at a step whose batch has fewer than 2 samples.
// The run index is checked by the audit (lib/audit) against the planned runs.
void validate_fault(const FaultSpec& fault, const spec::ExperimentSpec& spec,
                    const data::Dataset& train);

}  // namespace ra::record
