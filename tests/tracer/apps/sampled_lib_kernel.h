#pragma once
double sampled_kernel(long n);
