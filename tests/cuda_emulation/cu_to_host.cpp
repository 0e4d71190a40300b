// cu_to_host IN OUT: rewrites a CUDA source (.cu or .cuh) as C++ for the CUDA emulation
// (device.h). The two constructs that are not C++ become calls:
//   kernel<T><<<grid, block, shared, stream>>>(args);
//     -> ::tunecnn::emu::launch(dim3(grid), dim3(block), shared, stream, [&] { kernel<T>(args); });
//   extern __shared__ __align__(16) unsigned char bytes[];
//     -> unsigned char* bytes = TUNECNN_EMU_DYNAMIC_SHARED(unsigned char);
// A #line directive keeps compiler messages pointing at the original file.
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

bool in_name(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }

// Where the kernel expression before a launch's <<< starts: a name, maybe template arguments.
std::size_t kernel_start(const std::string& text, std::size_t launch) {
  std::size_t i = launch;
  while (i > 0 && std::isspace(static_cast<unsigned char>(text[i - 1]))) --i;
  if (i > 0 && text[i - 1] == '>') {
    int depth = 0;
    do {
      --i;
      depth += text[i] == '>';
      depth -= text[i] == '<';
    } while (i > 0 && depth > 0);
  }
  while (i > 0 && in_name(text[i - 1])) --i;
  return i;
}

// The index of the bracket closing the one at `open`.
std::size_t closing(const std::string& text, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < text.size(); ++i) {
    depth += text[i] == '(' || text[i] == '[' || text[i] == '{';
    depth -= text[i] == ')' || text[i] == ']' || text[i] == '}';
    if (depth == 0) return i;
  }
  throw std::runtime_error("unbalanced brackets after a kernel launch");
}

// The launch configuration's arguments, split at top-level commas, defaults filled in.
std::vector<std::string> configuration(const std::string& text) {
  std::vector<std::string> parts(1);
  int depth = 0;
  for (char c : text) {
    depth += c == '(' || c == '[' || c == '{';
    depth -= c == ')' || c == ']' || c == '}';
    if (c == ',' && depth == 0)
      parts.emplace_back();
    else
      parts.back() += c;
  }
  if (parts.size() < 2) throw std::runtime_error("a launch needs a grid and a block size");
  if (parts.size() < 3) parts.push_back("0");
  if (parts.size() < 4) parts.push_back("nullptr");
  return parts;
}

std::string rewrite_launches(const std::string& text) {
  std::string out;
  std::size_t done = 0;
  for (std::size_t at = text.find("<<<"); at != std::string::npos; at = text.find("<<<", done)) {
    const std::size_t start = kernel_start(text, at);
    const std::size_t end_config = text.find(">>>", at);
    if (end_config == std::string::npos) throw std::runtime_error("<<< without >>>");
    std::size_t open = end_config + 3;
    while (open < text.size() && std::isspace(static_cast<unsigned char>(text[open]))) ++open;
    if (open == text.size() || text[open] != '(')
      throw std::runtime_error("a launch without an argument list");
    const std::size_t close = closing(text, open);
    const std::vector<std::string> c = configuration(text.substr(at + 3, end_config - at - 3));
    out += text.substr(done, start - done);
    out += "::tunecnn::emu::launch(dim3(" + c[0] + "), dim3(" + c[1] + "), " + c[2] + ", " + c[3] +
           ", [&] { " + text.substr(start, at - start) + text.substr(open, close + 1 - open) +
           "; })";
    done = close + 1;
  }
  return out + text.substr(done);
}

std::string rewrite_dynamic_shared(const std::string& text) {
  static const std::regex declaration(
      R"(extern\s+__shared__\s+(?:__align__\(\d+\)\s+)?([\w ]+?)\s+(\w+)\s*\[\s*\]\s*;)");
  return std::regex_replace(text, declaration, "$1* $2 = TUNECNN_EMU_DYNAMIC_SHARED($1);");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: cu_to_host IN.cu OUT.cpp\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << "cu_to_host: cannot read " << argv[1] << "\n";
    return 1;
  }
  std::stringstream source;
  source << in.rdbuf();
  try {
    const std::string host = rewrite_dynamic_shared(rewrite_launches(source.str()));
    const std::string temporary = std::string(argv[2]) + ".tmp";
    std::ofstream out(temporary);
    out << "#line 1 \"" << argv[1] << "\"\n" << host;
    out.close();
    if (!out || std::rename(temporary.c_str(), argv[2]) != 0) {
      std::cerr << "cu_to_host: cannot write " << argv[2] << "\n";
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << argv[1] << ": cu_to_host: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
