#pragma once
// spec.json -> validated ExperimentSpec, and back. The format (every key, type, default and
// range) is documented in docs/spec.md.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "spec/spec.h"

namespace ra::spec {

// Validates `doc` and fills every default. Throws ra::ValidationError listing ALL problems found
// (not only the first), each with its JSON path in the form  model.layers[2].kernel  and what was
// expected ("expected a positive integer, got -3", "unknown key 'filter' (did you mean
// 'filters'?)"). Relative data paths are resolved against `base_dir` and stored absolute. Also
// resolves the model (spec/resolve.h), so impossible shapes are validation problems too, and
// checks the model's output against the classes of synthetic train/eval sets.
ExperimentSpec parse_spec(const nlohmann::json& doc, const std::string& base_dir);

// Reads and parses a file: missing/unreadable file or malformed JSON -> ra::InputError naming the
// file (and line/column for JSON syntax errors); then parse_spec with base_dir = the file's folder.
// "name" defaults to the file's stem ("configs/quick.json" -> "quick").
ExperimentSpec load_spec(const std::string& path);

// Spec JSON text, parsed and validated as load_spec does a file's contents: `source` names the
// text in messages, relative data paths resolve against `base_dir`, and "name" is not defaulted
// (no file stem). For callers that hold the text, such as the fuzz target fuzz/fuzz_spec.cpp.
ExperimentSpec parse_spec_text(std::string_view text, const std::string& source,
                               const std::string& base_dir);

// Canonical JSON of a resolved spec: every key present with its resolved value, keys sorted
// (nlohmann::json default), so equal specs give equal dumps (used for the trace header digest).
// parse_spec(to_json(s), s.base_dir) gives back an equal spec. base_dir is not part of it.
nlohmann::json to_json(const ExperimentSpec& spec);

}  // namespace ra::spec
