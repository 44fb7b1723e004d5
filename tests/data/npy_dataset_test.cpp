// npy data sets on files written by NumPy itself (Debian's python3-numpy, run by the test: the
// real producer of these files), raw and gzip-compressed: dtypes, layouts, label shapes, limits,
// and every refused file named with its problem.
#include "data/npy_dataset.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/dataset.h"
#include "idx_fixtures.h"

using namespace ra::data;
using namespace ra::data::testing;
using Catch::Matchers::Contains;
using ra::spec::DataFormat;
using ra::spec::DatasetSpec;
using ra::spec::ImageLayout;

namespace {

// Runs `script` with /usr/bin/python3 in `dir`, after "import gzip, numpy as np" and two arrays:
// x, 4 images [4, 3, 2, 5] of uint8 with x[n, c, h, w] = 60 n + 10 c + 5 h + w, plus 46 in
// sample 3 (so that 0 and 255 both occur), and y, the labels [0, 9, 3, 9].
void numpy(const TempDir& dir, const std::string& script) {
  const std::string path = dir.file("make.py");
  std::ofstream(path) << "import gzip, numpy as np\n"
                      << "x = (np.arange(4).reshape(4, 1, 1, 1) * 60 + np.arange(3).reshape(1, 3, "
                         "1, 1) * 10 + np.arange(2).reshape(1, 1, 2, 1) * 5 + np.arange(5))\n"
                      << "x[3] += 46\nx = x.astype(np.uint8)\n"
                      << "y = np.array([0, 9, 3, 9])\n"
                      << script << "\n";
  const std::string command = "cd '" + dir.file("") + "' && /usr/bin/python3 make.py";
  REQUIRE(std::system(command.c_str()) == 0);
}

// x[n, c, h, w] as the script above makes it.
float pixel(int n, int c, int h, int w) {
  return static_cast<float>(n * 60 + c * 10 + h * 5 + w + (n == 3 ? 46 : 0));
}

DatasetSpec npy_spec(const TempDir& dir, const std::string& images, const std::string& labels,
                     ImageLayout layout = ImageLayout::nchw, std::int64_t limit = 0) {
  DatasetSpec s;
  s.format = DataFormat::npy;
  s.images = dir.file(images);
  s.labels = dir.file(labels);
  s.layout = layout;
  s.limit = limit;
  return s;
}

std::string npy_error(const DatasetSpec& spec, const ra::Shape& expected = {}) {
  try {
    load_dataset(spec, 1.0f, "train", expected);
  } catch (const ra::InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

void check_pixels(const Dataset& set, float scale = 1.0f) {
  REQUIRE(set.sample_shape == ra::Shape{3, 2, 5});
  REQUIRE(set.images.size() == static_cast<std::size_t>(set.size() * 30));
  for (int n = 0; n < set.size(); ++n) {
    for (int c = 0; c < 3; ++c) {
      for (int h = 0; h < 2; ++h) {
        for (int w = 0; w < 5; ++w) {
          INFO("sample " << n << " [" << c << ", " << h << ", " << w << "]");
          REQUIRE(set.images[n * 30 + c * 10 + h * 5 + w] == pixel(n, c, h, w) * scale);
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("npy: NumPy's arrays read back in every layout and dtype", "[npy]") {
  TempDir dir;
  numpy(dir, R"(
np.save('x.npy', x); np.save('y.npy', y)
np.save('x_nhwc.npy', x.transpose(0, 2, 3, 1)); np.save('y_col.npy', y.astype(np.uint8)[:, None])
np.save('xf.npy', x.astype(np.float32)); np.save('y32.npy', y.astype(np.int32))
np.save('x1.npy', x[:, 0]); np.save('y12.npy', np.array([0, 12, 3, 9], dtype=np.int16))
with gzip.open('x.npy.gz', 'wb') as f: np.save(f, x)
)");
  const Dataset nchw = load_dataset(npy_spec(dir, "x.npy", "y.npy"), 1.0f, "train", {3, 2, 5});
  check_pixels(nchw);
  CHECK(nchw.labels == std::vector<std::int32_t>{0, 9, 3, 9});
  CHECK(nchw.classes == 10);
  CHECK(nchw.images[3 * 30 + 29] == 255.0f);  // the last pixel of the last sample
  CHECK(nchw.images[0] == 0.0f);
  // Keras' [N, H, W, C] arrays and [N, 1] uint8 labels: the same samples.
  const Dataset nhwc =
      load_dataset(npy_spec(dir, "x_nhwc.npy", "y_col.npy", ImageLayout::nhwc), 1.0f, "train");
  check_pixels(nhwc);
  CHECK(nhwc.labels == nchw.labels);
  // float32 pixels, int32 labels, a scale.
  check_pixels(load_dataset(npy_spec(dir, "xf.npy", "y32.npy"), 0.5f, "train"), 0.5f);
  // gzip, and a limit: the first samples.
  const Dataset gz =
      load_dataset(npy_spec(dir, "x.npy.gz", "y.npy", ImageLayout::nchw, 2), 1.0f, "train");
  check_pixels(gz);
  CHECK(gz.size() == 2);
  // [N, H, W]: one channel. A label of 12 makes 13 classes, whatever the limit.
  const Dataset gray =
      load_dataset(npy_spec(dir, "x1.npy", "y12.npy", ImageLayout::nchw, 1), 1.0f, "train");
  CHECK(gray.sample_shape == ra::Shape{1, 2, 5});
  CHECK(gray.classes == 13);
  CHECK(gray.images[9] == pixel(0, 0, 1, 4));
}

TEST_CASE("npy: bad files are refused, naming the file and the problem", "[npy]") {
  TempDir dir;
  numpy(dir, R"(
np.save('x.npy', x); np.save('y.npy', y)
b = open('x.npy', 'rb').read()
open('cut_header.npy', 'wb').write(b[:40]); open('cut_data.npy', 'wb').write(b[:-3])
open('trailing.npy', 'wb').write(b + b'\0')
np.save('x64.npy', x.astype(np.float64)); np.save('xbig.npy', x.astype('>f4'))
np.save('xfortran.npy', np.asfortranarray(x)); np.save('x2d.npy', x.reshape(4, 30))
np.save('yf.npy', y.astype(np.float32)); np.save('y3.npy', y[:3]); np.save('yneg.npy', -y)
np.save('y2d.npy', np.stack([y, y], 1))
xn = x.astype(np.float32); xn[2, 1, 0, 3] = np.inf; np.save('xinf.npy', xn)
np.save('x_nhwc.npy', x.transpose(0, 2, 3, 1))
)");
  const auto refused = [&](const std::string& images, const std::string& labels,
                           const std::string& what, const ra::Shape& expected = {}) {
    INFO(images << " " << labels);
    CHECK_THAT(npy_error(npy_spec(dir, images, labels), expected), Contains(what));
  };
  refused("nope.npy", "y.npy", "data.train.images: " + dir.file("nope.npy") + ": cannot open");
  refused("cut_header.npy", "y.npy",
          dir.file("cut_header.npy") +
              ": not a valid .npy file: truncated: the header declares 118 bytes, the file ends "
              "after 30");
  refused("cut_data.npy", "y.npy",
          dir.file("cut_data.npy") +
              ": truncated: shape [4, 3, 2, 5] of dtype '|u1' needs 120 "
              "bytes of data, the file holds 117");
  refused("trailing.npy", "y.npy", "trailing bytes: shape [4, 3, 2, 5]");
  refused("x64.npy", "y.npy", "images of dtype '<f8' are not read; expected uint8");
  refused("xbig.npy", "y.npy", "images of dtype '>f4' are not read");
  refused("xfortran.npy", "y.npy", "a Fortran-ordered array (fortran_order True) is not read");
  refused("x2d.npy", "y.npy", "images array of shape [4, 30]; expected [N, H, W]");
  refused("x.npy", "yf.npy", dir.file("yf.npy") + ": labels of dtype '<f4' are not read");
  refused("x.npy", "y3.npy", "holds 4 images but " + dir.file("y3.npy") + " holds 3 labels");
  refused("x.npy", "y2d.npy", "labels array of shape [4, 2]; expected [N] or [N, 1]");
  refused("x.npy", "yneg.npy", "label -9 of sample 1 is outside 0..16777215");
  refused("xinf.npy", "y.npy", "value inf of sample 2 (element 73) is not finite");
  refused("x.npy", "y.npy", "holds images of shape [3, 2, 5] but model.input is [1, 2, 5]",
          {1, 2, 5});
  // An [N, H, W, C] file read as [N, C, H, W]: the message says which layout to give.
  refused("x_nhwc.npy", "y.npy", "add \"layout\": \"nhwc\" to the data set", {3, 2, 5});
  CHECK_THAT(npy_error(npy_spec(dir, "x.npy", "y.npy", ImageLayout::nchw, 5)),
             Contains("data.train.limit: 5 exceeds the 4 samples of " + dir.file("x.npy")));
}
