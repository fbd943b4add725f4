#ifndef EXTRA_API_H
#define EXTRA_API_H
int extra_score(int n);
#endif
