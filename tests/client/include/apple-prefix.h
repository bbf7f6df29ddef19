/* Force-included (-include) before ggml-metal-device.m: what Apple's SDK brings along with
 * Foundation that GNUstep's does not. Test rig only; every item is listed with its reason in
 * tests/client/README.md. */
#ifndef VZCAPS_APPLE_PREFIX_H
#define VZCAPS_APPLE_PREFIX_H
#include <unistd.h> /* Apple's Foundation includes it: usleep, sysconf */
#import <Foundation/Foundation.h>

/* Apple's nil is a plain null pointer (__DARWIN_NULL); gcc's objc.h makes it (id)0, which C
 * rejects (as warnings) where ggml compares or assigns it to C pointers. */
#undef nil
#define nil ((void *)0)

/* Mach memory calls ggml makes on macOS (TARGET_OS_OSX) to allocate host buffers; the stand-in
 * Metal library implements them with mmap. */
typedef int kern_return_t;
typedef unsigned long vm_address_t, vm_size_t;
typedef unsigned int vm_map_t;
#define KERN_SUCCESS 0
#define VM_FLAGS_ANYWHERE 1
#ifdef __cplusplus
extern "C" {
#endif
vm_map_t mach_task_self(void);
kern_return_t vm_allocate(vm_map_t task, vm_address_t *address, vm_size_t size, int flags);
kern_return_t vm_deallocate(vm_map_t task, vm_address_t address, vm_size_t size);
#ifdef __cplusplus
}
#endif
#endif
