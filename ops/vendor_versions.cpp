#include "ops/vendor_versions.h"

#ifdef TUNECNN_HAVE_ONEDNN
#include <dnnl.hpp>
#endif

namespace tunecnn {

std::string onednn_version() {
#ifdef TUNECNN_HAVE_ONEDNN
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
#else
  return "";
#endif
}

}  // namespace tunecnn
