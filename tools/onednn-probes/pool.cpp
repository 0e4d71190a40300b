// oneDNN max pooling 3x3 s2 on AlexNet's pools, fwd (training, with workspace) and bwd, per layout.
#include <dnnl.hpp>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
using namespace dnnl; using tag = memory::format_tag;
double med(std::vector<double> v){std::sort(v.begin(),v.end());return v[v.size()/2];}
int main(int argc, char** argv) {
  int mb = 64;
  struct L { const char* n; int c, h, oh; } ls[] = {{"alexnet1",96,55,27},{"alexnet2",256,27,13},{"alexnet3",256,13,6}};
  engine eng(engine::kind::cpu,0); stream st(eng);
  for (auto l : ls) for (auto [tn, t] : std::vector<std::pair<const char*,tag>>{{"nchw",tag::nchw},{"nhwc",tag::nhwc},{"nChw16c",tag::nChw16c}}) {
    memory::desc src({mb,l.c,l.h,l.h}, memory::data_type::f32, t), dst({mb,l.c,l.oh,l.oh}, memory::data_type::f32, t);
    pooling_forward::desc fd(prop_kind::forward_training, algorithm::pooling_max, src, dst, {2,2},{3,3},{0,0},{0,0});
    pooling_forward::primitive_desc fpd(fd, eng);
    pooling_backward::desc bd(algorithm::pooling_max, src, dst, {2,2},{3,3},{0,0},{0,0});
    pooling_backward::primitive_desc bpd(bd, eng, fpd);
    memory ms(src,eng), md(dst,eng), mws(fpd.workspace_desc(),eng), mds(src,eng), mdd(dst,eng);
    float* p=(float*)ms.get_data_handle(); for(size_t i=0;i<src.get_size()/4;i++) p[i]=(i*7919%1000)/1000.f;
    auto f = pooling_forward(fpd); auto b = pooling_backward(bpd);
    std::vector<double> tf, tb;
    for (int r=0;r<15;r++){
      auto t0=std::chrono::steady_clock::now(); f.execute(st,{{DNNL_ARG_SRC,ms},{DNNL_ARG_DST,md},{DNNL_ARG_WORKSPACE,mws}}); st.wait();
      auto t1=std::chrono::steady_clock::now(); b.execute(st,{{DNNL_ARG_DIFF_DST,mdd},{DNNL_ARG_DIFF_SRC,mds},{DNNL_ARG_WORKSPACE,mws}}); st.wait();
      auto t2=std::chrono::steady_clock::now();
      tf.push_back(std::chrono::duration<double>(t1-t0).count()); tb.push_back(std::chrono::duration<double>(t2-t1).count());
    }
    printf("%-9s %-8s fwd %8.3f ms (%s)  bwd %8.3f ms (%s)\n", l.n, tn, med(tf)*1e3, fpd.impl_info_str(), med(tb)*1e3, bpd.impl_info_str());
  }
}
