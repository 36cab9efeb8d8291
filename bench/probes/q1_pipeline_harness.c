// Runs a compiled Q1 pipeline (the C tier's source, taken from the C code cache) or the
// hand-fused loop of bench/probes/q1_fused.c over 3M synthetic lineitem rows, to count its
// instructions per row under callgrind (deterministic, unlike time on a shared machine).
// bench/probes/q1_instructions.sh builds and runs it. The frame follows
// nacre_datafusion::codegen::FrameLayout for Q1's 7 scanned columns (qty, price, disc, tax,
// returnflag and linestatus views, shipdate), with a lookup table for the direct variant.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
uint64_t nacre_entry(uint64_t *p0, uint64_t p1, uint64_t p2, uint32_t *status);
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define N 3000000
#ifndef REPS
#define REPS 7
#endif
static uint64_t view1(char c){return 1ull | ((uint64_t)(uint8_t)c<<32);}
int main(){
  __int128 *qty=malloc(N*16),*price=malloc(N*16),*disc=malloc(N*16),*tax=malloc(N*16);
  uint64_t *rf=malloc(N*16),*ls=malloc(N*16); int32_t *ship=malloc(N*4);
  srand(1);
  for(int i=0;i<N;i++){qty[i]=(rand()%50+1)*100;price[i]=rand()%10000000+90000;disc[i]=rand()%11;tax[i]=rand()%9;
    int r=rand()%4; const char*f="ANNR",*s="FFOF"; rf[2*i]=view1(f[r]);rf[2*i+1]=0;ls[2*i]=view1(s[r]);ls[2*i+1]=0; ship[i]=8000+rand()%2600;}
  uint64_t cap=256; uint64_t *keys=calloc(cap*4,8),*used=calloc(cap,8); int64_t *b0=calloc(cap+1,8); __int128 *b1=calloc((cap+1)*5,16); double *b2=calloc(cap+1,8);
  uint64_t status=0,count=0; uint64_t frame[23]={0}; uint64_t lut[16]; for(int q=0;q<16;q++) lut[q]=q; frame[22]=(uintptr_t)lut;
  frame[0]=(uintptr_t)qty;frame[1]=(uintptr_t)price;frame[2]=(uintptr_t)disc;frame[3]=(uintptr_t)tax;frame[4]=(uintptr_t)rf;frame[5]=(uintptr_t)ls;frame[6]=(uintptr_t)ship;
  frame[7]=(uintptr_t)b0;frame[8]=(uintptr_t)b1;frame[9]=(uintptr_t)b2;frame[10]=(uintptr_t)&status;frame[11]=(uintptr_t)keys;frame[12]=(uintptr_t)used;frame[13]=(uintptr_t)&count;frame[14]=cap;
  uint32_t st=0; double best=1e9;
  for(int rep=0;rep<REPS;rep++){double t=now(); uint64_t r=nacre_entry(frame,0,N,&st); t=now()-t; if(t<best)best=t; if(r!=N){printf("stopped %lu\n",r);}}
  printf("best %.2f ms  count=%lu status=%lu  ns/row %.2f\n",best*1e3,count,status,best*1e9/N);
}
