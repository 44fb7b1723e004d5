// The data formats of real CIFAR-10 copies, end to end: configs/resnet29v2-cifar10-files.json on
// batch files written per CIFAR-10's published binary format (the real ones cannot be downloaded
// here), and NumPy's own .npy arrays of the same samples training the same bits.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_runner.h"

using Catch::Matchers::Contains;
using ra::test::quoted;
using ra::test::run_cli;
using ra::test::source_path;
using ra::test::TempDir;

namespace {

namespace fs = std::filesystem;

// Runs `script` with /usr/bin/python3 in `dir`, after "import numpy as np".
void python_numpy(const TempDir& dir, const std::string& script) {
  dir.write("make.py", "import numpy as np\n" + script + "\n");
  const std::string command = "cd " + quoted(dir.path()) + " && /usr/bin/python3 make.py";
  REQUIRE(std::system(command.c_str()) == 0);
}

// CIFAR-10 records (1 label byte, 3072 pixel bytes, channel-major) of x [N, 3, 32, 32] uint8 and
// labels y, written by NumPy as a batch file would hold them.
const char* kWriteBatch =
    "def batch(path, x, y):\n"
    "    np.concatenate([y.astype(np.uint8)[:, None], x.reshape(len(y), -1)], 1).tofile(path)\n";

}  // namespace

TEST_CASE("the ResNet29v2 spec trains on CIFAR-10 batch files where they are",
          "[cli][data][cifar10]") {
  TempDir dir;
  const fs::path spec = dir.path() / "resnet29v2-cifar10-files.json";
  fs::copy_file(source_path("configs/resnet29v2-cifar10-files.json"), spec);
  // Without the files: validate names each missing one by its spec key (exit 2).
  const auto missing = run_cli("validate " + quoted(spec));
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Contains("data.train.files[0]: " +
                                   (dir.path() / "cifar-10-batches-bin/data_batch_1.bin").string() +
                                   ": cannot open (No such file or directory)"));
  // Five training batches of 8 records and a test batch of 8, the layout of the real archive.
  fs::create_directories(dir.path() / "cifar-10-batches-bin");
  python_numpy(dir, std::string(kWriteBatch) + R"(
rng = np.random.default_rng(5)
for name in ['data_batch_%d' % i for i in range(1, 6)] + ['test_batch']:
    batch('cifar-10-batches-bin/%s.bin' % name, rng.integers(0, 256, (8, 3, 32, 32), np.uint8),
          rng.integers(0, 10, 8))
)");
  CHECK(run_cli("validate " + quoted(spec)).exit_code == 0);
  const auto audit = run_cli("run " + quoted(spec) + " --runs 2 --out " +
                             quoted(dir.path() / "out") + " --json -");
  INFO(audit.err);
  REQUIRE(audit.exit_code == 0);
  const auto report = nlohmann::json::parse(audit.out);
  CHECK(report.at("verdict").at("identical") == true);
  for (const auto& run : report.at("runs")) {
    CHECK(run.at("steps") == 2);  // 40 samples in batches of 32
    CHECK(run.at("eval_accuracy").is_number());
  }
}

TEST_CASE("NumPy arrays and CIFAR-10 batches of the same samples train the same bits",
          "[cli][data][npy]") {
  TempDir dir;
  python_numpy(dir, std::string(kWriteBatch) + R"(
rng = np.random.default_rng(7)
x = rng.integers(0, 256, (48, 3, 32, 32), np.uint8); y = rng.integers(0, 10, 48)
batch('b1.bin', x[:20], y[:20]); batch('b2.bin', x[20:], y[20:])
np.save('x.npy', x); np.save('y.npy', y)
np.save('x_keras.npy', x.transpose(0, 2, 3, 1)); np.save('y_keras.npy', y.astype(np.uint8)[:, None])
np.save('x_f64.npy', x.astype(np.float64))
)");
  auto spec =
      nlohmann::json::parse(ra::test::read_text(source_path("configs/resnet-tiny-synthetic.json")));
  spec["model"]["input"] = {3, 32, 32};
  spec["data"]["scale"] = 1.0 / 255;
  const auto train = [&](const std::string& name, const nlohmann::json& set) {
    spec["name"] = name;
    spec["data"]["train"] = set;
    return run_cli("train " + quoted(dir.write(name + ".json", spec.dump())) + " --json");
  };
  const auto cifar = train("c", {{"format", "cifar10"}, {"files", {"b1.bin", "b2.bin"}}});
  const auto npy = train("n", {{"format", "npy"}, {"images", "x.npy"}, {"labels", "y.npy"}});
  const auto keras = train("k", {{"format", "npy"},
                                 {"images", "x_keras.npy"},
                                 {"labels", "y_keras.npy"},
                                 {"layout", "nhwc"}});
  for (const auto* r : {&cifar, &npy, &keras}) {
    INFO(r->err);
    REQUIRE(r->exit_code == 0);
  }
  const auto bits = [](const ra::test::CliResult& r) {
    const auto j = nlohmann::json::parse(r.out);
    return j.at("final_loss_bits").get<std::string>() + " " +
           j.at("weights_xxh3").get<std::string>();
  };
  CHECK(bits(npy) == bits(cifar));
  CHECK(bits(keras) == bits(cifar));
  // A file of the wrong dtype: exit 2, naming the file and what to do.
  const auto wrong = train("w", {{"format", "npy"}, {"images", "x_f64.npy"}, {"labels", "y.npy"}});
  CHECK(wrong.exit_code == 2);
  CHECK_THAT(wrong.err, Contains((dir.path() / "x_f64.npy").string() +
                                 ": images of dtype '<f8' are not read"));
}
