// oneDNN batch norm (training: batch statistics, scale+shift) + clip(0,6), forward and backward,
// on MobileNet-1.0-224's 27 BN layers at batch 8, NHWC; summed per training step.
#include <dnnl.hpp>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
using namespace dnnl; using tag = memory::format_tag;
double med(std::vector<double> v){std::sort(v.begin(),v.end());return v[v.size()/2];}
double now(){return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();}
int main() {
  const int mb = 8;
  std::vector<std::pair<int,int>> layers = {{32,112},{32,112},{64,112},{64,56},{128,56},{128,56},{128,56},{128,28},{256,28},{256,28},{256,28},{256,14},{512,14}};
  for (int i = 0; i < 10; ++i) layers.push_back({512,14});
  for (auto l : std::vector<std::pair<int,int>>{{512,7},{1024,7},{1024,7},{1024,7}}) layers.push_back(l);
  engine eng(engine::kind::cpu,0); stream st(eng);
  double fwd_total = 0, bwd_total = 0;
  for (auto [c, h] : layers) {
    memory::desc x({mb,c,h,h}, memory::data_type::f32, tag::nhwc);
    auto flags = normalization_flags::use_scale_shift;
    batch_normalization_forward::primitive_desc bf({prop_kind::forward_training, x, 1e-5f, flags}, eng);
    batch_normalization_backward::primitive_desc bb({prop_kind::backward, x, x, 1e-5f, flags}, eng, bf);
    eltwise_forward::primitive_desc ef({prop_kind::forward_training, algorithm::eltwise_clip, x, 0.f, 6.f}, eng);
    eltwise_backward::primitive_desc eb({algorithm::eltwise_clip, x, x, 0.f, 6.f}, eng, ef);
    memory src(x,eng), dst(x,eng), act(x,eng), dact(x,eng), ddst(x,eng), dsrc(x,eng);
    memory ss(bf.weights_desc(),eng), dss(bb.diff_weights_desc(),eng), mean(bf.mean_desc(),eng), var(bf.variance_desc(),eng);
    float* p=(float*)src.get_data_handle(); for(size_t i=0;i<x.get_size()/4;i++) p[i]=(i*7919%1000)/500.f-1;
    float* s=(float*)ss.get_data_handle(); for(int i=0;i<2*c;i++) s[i]= i<c?1.f:0.1f;
    float* g=(float*)dact.get_data_handle(); for(size_t i=0;i<x.get_size()/4;i++) g[i]=(i*31%100)/100.f-0.5f;
    auto bnf=batch_normalization_forward(bf); auto bnb=batch_normalization_backward(bb); auto clf=eltwise_forward(ef); auto clb=eltwise_backward(eb);
    std::vector<double> tf, tb;
    for (int r=0;r<9;r++){
      double t0=now();
      bnf.execute(st,{{DNNL_ARG_SRC,src},{DNNL_ARG_DST,dst},{DNNL_ARG_SCALE_SHIFT,ss},{DNNL_ARG_MEAN,mean},{DNNL_ARG_VARIANCE,var}});
      clf.execute(st,{{DNNL_ARG_SRC,dst},{DNNL_ARG_DST,act}}); st.wait();
      double t1=now();
      clb.execute(st,{{DNNL_ARG_SRC,dst},{DNNL_ARG_DIFF_DST,dact},{DNNL_ARG_DIFF_SRC,ddst}});
      bnb.execute(st,{{DNNL_ARG_SRC,src},{DNNL_ARG_DIFF_DST,ddst},{DNNL_ARG_SCALE_SHIFT,ss},{DNNL_ARG_MEAN,mean},{DNNL_ARG_VARIANCE,var},{DNNL_ARG_DIFF_SRC,dsrc},{DNNL_ARG_DIFF_SCALE_SHIFT,dss}}); st.wait();
      double t2=now(); tf.push_back(t1-t0); tb.push_back(t2-t1);
    }
    fwd_total += med(tf); bwd_total += med(tb);
  }
  printf("oneDNN BN+clip(0,6) over MobileNet-224 b8 (27 layers, NHWC): fwd %.2f ms, bwd %.2f ms, total %.2f ms per step\n", fwd_total*1e3, bwd_total*1e3, (fwd_total+bwd_total)*1e3);
}
