#pragma once
// One way to touch a folder the tool manages (an audit folder and its run-NNN/ snapshot folders):
// every look, create, replace and remove inside it is made relative to the folder's open
// descriptor and never follows a symbolic link (fstatat with AT_SYMLINK_NOFOLLOW, openat with
// O_NOFOLLOW, unlinkat, renameat). So a name in the folder that someone made a link to a folder
// elsewhere, or swapped for one while the tool runs, can never send a write or a delete out of
// the folder: a link where a file or folder is expected is refused, naming it (InputError, exit
// 2). The folder itself is opened by the path the user gave, links and all: that is their choice.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ra {

class Directory {
 public:
  // The folder at `path`: InputError naming it when it is missing or not a folder.
  static Directory open(const std::filesystem::path& path);

  Directory(Directory&& other) noexcept;
  Directory& operator=(Directory&& other) noexcept;
  Directory(const Directory&) = delete;
  Directory& operator=(const Directory&) = delete;
  ~Directory();

  // What an entry is, never following a link.
  enum class Kind { absent, file, folder, link, other };
  Kind kind(const std::string& name) const;
  // "a symbolic link", "a FIFO (named pipe)", ...: for messages about an entry of the wrong kind.
  std::string describe(const std::string& name) const;
  // The entries' names, sorted ("." and ".." left out).
  std::vector<std::string> names() const;

  // The subfolder `name` (one path component): none when absent, unless `create`. InputError
  // naming it when it is a link or anything but a folder.
  std::optional<Directory> subfolder(const std::string& name, bool create) const;
  // Removes the file `name`; nothing when absent. InputError naming it when it is a link or not
  // a file (a link is never removed: it may be someone's, pointing anywhere).
  void remove_file(const std::string& name) const;
  // Removes the subfolder `name` when it is empty; false (and nothing done) otherwise.
  bool remove_empty_folder(const std::string& name) const;
  // Removes the subfolder `name` and all it holds: files, links (the link itself, never what it
  // names) and folders, at most `max_depth` levels down; nothing when absent. For a folder the
  // tool hands over whole (an exec run's checkpoints/, whatever the script saves there).
  // InputError naming it when it is a link or not a folder, or when it nests deeper.
  void remove_tree(const std::string& name, int max_depth = 16) const;

  int fd() const noexcept { return fd_; }
  const std::filesystem::path& path() const noexcept { return path_; }  // for messages

 private:
  Directory(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace ra
