#pragma once
// A small command-line parser shared by the apps: --name value and --flag options, each with a
// help line, so every app prints a clear --help and names the option it cannot parse.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/error.h"
#include "core/types.h"

namespace tunecnn {

class CommandLine;

// A command line the user must fix, as opposed to a failure while running. Every program exits
// with status 2 for one (1 for other errors), as getopt-style tools do.
class UsageError : public Error {
 public:
  using Error::Error;
};

// A whole non-negative integer such as "1048576"; nullopt for anything else, so each app reports
// the error in its own way.
std::optional<std::size_t> parse_byte_count(const std::string& text);

// Bytes as a user writes them: "1048576", or a whole number with K, M or G (powers of 1024; "4G",
// "512MiB", "64k"); nullopt for anything else.
std::optional<std::size_t> parse_memory_size(const std::string& text);

// The non-empty items of a comma-separated list ("a,,b" -> {"a", "b"}).
std::vector<std::string> split_commas(const std::string& text);

// --allocator-cache keep|bounded (train, bench train, bench memory): declares it, and reads it
// (a UsageError for another value).
void add_allocator_cache_option(CommandLine& cli);
CachePolicy allocator_cache_option(const CommandLine& cli);

// --recompute-activations (train, bench train, bench memory): declares the flag; apply it with
// set_recompute_activations(cli.has("recompute-activations")).
void add_recompute_activations_option(CommandLine& cli);

// "C,H,W" of one example; throws Error naming `option` and the text otherwise.
Shape parse_chw(const std::string& text, const std::string& option);

class CommandLine {
 public:
  CommandLine(std::string program, std::string summary);
  // Declares an option taking a value, with its default ("" for none) and help text. A one-letter
  // name is written -X on the command line (and --X).
  void option(const std::string& name, const std::string& default_value, const std::string& help);
  void flag(const std::string& name, const std::string& help);
  // The program takes arguments that are not options (`predict IMAGE...`), named `name` in help.
  void positionals(const std::string& name, const std::string& help);
  const std::vector<std::string>& positional() const { return positional_; }
  // Parses argv; returns false when --help was asked (help is then printed to stdout).
  // Throws UsageError on an unknown option or a missing value (an option where its value should
  // be, as in `--epochs --batch-size 8`, counts as missing: --name=VALUE takes any value).
  bool parse(int argc, const char* const* argv);

  std::string get(const std::string& name) const;
  // UsageError naming the option when its value is not a number.
  int get_int(const std::string& name) const;
  double get_double(const std::string& name) const;
  bool has(const std::string& name) const;  // a flag was given, or a value option is non-empty
  std::string help() const;

 private:
  struct Spec {
    std::string default_value, help;
    bool is_flag = false;
  };
  std::string program_, summary_;
  std::vector<std::string> order_;
  std::map<std::string, Spec> specs_;
  std::map<std::string, std::string> values_;
  std::string positional_name_, positional_help_;  // empty: none taken
  std::vector<std::string> positional_;
};

}  // namespace tunecnn
