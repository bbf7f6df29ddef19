/* Stand-in libdispatch (Debian has none): groups run each block on its own thread, semaphores
 * count under a mutex. Only the calls ggml-metal-device.m makes. Test rig only; never: queues,
 * priorities or timeouts other than DISPATCH_TIME_FOREVER. */
#include <dispatch/dispatch.h>
#include <Block.h>
#include <pthread.h>
#include <stdlib.h>

struct vzcaps_dispatch_object {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long count; /* group: blocks still running; semaphore: its value */
};

static struct vzcaps_dispatch_object the_global_queue;

dispatch_queue_t dispatch_get_global_queue(long identifier, unsigned long flags)
{
    (void)identifier;
    (void)flags;
    return &the_global_queue;
}

static struct vzcaps_dispatch_object *object_new(long count)
{
    struct vzcaps_dispatch_object *o = calloc(1, sizeof *o);
    if (!o)
        abort();
    pthread_mutex_init(&o->mu, NULL);
    pthread_cond_init(&o->cv, NULL);
    o->count = count;
    return o;
}

dispatch_group_t dispatch_group_create(void) { return object_new(0); }
dispatch_semaphore_t dispatch_semaphore_create(long value) { return object_new(value); }

struct job {
    dispatch_group_t group;
    dispatch_block_t block;
};

static void *run_job(void *arg)
{
    struct job *j = arg;
    j->block();
    Block_release(j->block);
    pthread_mutex_lock(&j->group->mu);
    if (--j->group->count == 0)
        pthread_cond_broadcast(&j->group->cv);
    pthread_mutex_unlock(&j->group->mu);
    free(j);
    return NULL;
}

void dispatch_group_async(dispatch_group_t group, dispatch_queue_t queue, dispatch_block_t block)
{
    (void)queue;
    struct job *j = malloc(sizeof *j);
    if (!j)
        abort();
    j->group = group;
    j->block = Block_copy(block);
    pthread_mutex_lock(&group->mu);
    group->count++;
    pthread_mutex_unlock(&group->mu);
    pthread_t t;
    if (pthread_create(&t, NULL, run_job, j) != 0)
        abort();
    pthread_detach(t);
}

long dispatch_group_wait(dispatch_group_t group, dispatch_time_t timeout)
{
    (void)timeout; /* ggml waits forever */
    pthread_mutex_lock(&group->mu);
    while (group->count > 0)
        pthread_cond_wait(&group->cv, &group->mu);
    pthread_mutex_unlock(&group->mu);
    return 0;
}

long dispatch_semaphore_signal(dispatch_semaphore_t s)
{
    pthread_mutex_lock(&s->mu);
    s->count++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

long dispatch_semaphore_wait(dispatch_semaphore_t s, dispatch_time_t timeout)
{
    (void)timeout;
    pthread_mutex_lock(&s->mu);
    while (s->count <= 0)
        pthread_cond_wait(&s->cv, &s->mu);
    s->count--;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

void dispatch_release(void *object)
{
    struct vzcaps_dispatch_object *o = object;
    if (!o || o == &the_global_queue)
        return;
    pthread_mutex_destroy(&o->mu);
    pthread_cond_destroy(&o->cv);
    free(o);
}
