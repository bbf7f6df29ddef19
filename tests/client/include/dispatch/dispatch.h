/* Stand-in for the few libdispatch calls ggml-metal-device.m makes (Debian has no libdispatch):
 * groups, a global queue handle, semaphores. Test rig only. */
#ifndef VZCAPS_STANDIN_DISPATCH_H
#define VZCAPS_STANDIN_DISPATCH_H
#include <stdint.h>

typedef struct vzcaps_dispatch_object *dispatch_group_t, *dispatch_semaphore_t, *dispatch_queue_t;
typedef uint64_t dispatch_time_t;
typedef void (^dispatch_block_t)(void);
#define DISPATCH_TIME_FOREVER (~0ull)
#define QOS_CLASS_USER_INITIATED 0x19
#define QOS_CLASS_DEFAULT 0x15

#ifdef __cplusplus
extern "C" {
#endif
dispatch_queue_t dispatch_get_global_queue(long identifier, unsigned long flags);
dispatch_group_t dispatch_group_create(void);
void dispatch_group_async(dispatch_group_t group, dispatch_queue_t queue, dispatch_block_t block);
long dispatch_group_wait(dispatch_group_t group, dispatch_time_t timeout);
dispatch_semaphore_t dispatch_semaphore_create(long value);
long dispatch_semaphore_signal(dispatch_semaphore_t sema);
long dispatch_semaphore_wait(dispatch_semaphore_t sema, dispatch_time_t timeout);
void dispatch_release(void *object);
#ifdef __cplusplus
}
#endif
#endif
