#ifndef CORE_API_H
#define CORE_API_H
#ifdef __cplusplus
extern "C" {
#endif
int core_lookup(int i);
int core_sum(void);
#ifdef __cplusplus
}
#endif
#endif
