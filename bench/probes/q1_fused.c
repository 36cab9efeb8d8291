// Q1's hand-fused loop in C (as src/bench/query.rs's Rust one), with the entry point of a
// compiled pipeline, for bench/probes/q1_pipeline_harness.c.
#include <stdint.h>
uint64_t nacre_entry(uint64_t *f, uint64_t s, uint64_t e, uint32_t *st){
  __int128 *qty=(void*)f[0],*price=(void*)f[1],*disc=(void*)f[2],*tax=(void*)f[3];
  uint64_t *rf=(void*)f[4],*ls=(void*)f[5]; int32_t *ship=(void*)f[6];
  static __int128 acc[6][5];
  for(uint64_t i=s;i<e;i++){
    __int128 pass = ship[i] <= 10471;
    uint8_t fl = rf[2*i]>>32; int g = fl=='A'?0:fl=='N'?1:2;
    g = g*2 + ((uint8_t)(ls[2*i]>>32)=='O');
    __int128 dp = price[i]*(100-disc[i]);
    __int128 *a=acc[g];
    a[0]+=pass*qty[i]; a[1]+=pass*price[i]; a[2]+=pass*dp; a[3]+=pass*dp*(100+tax[i]); a[4]+=pass;
  }
  *(uint64_t*)f[13]=acc[0][4]>0;
  return e;
}
