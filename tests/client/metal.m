/* Stand-in Metal.framework for running llama.cpp's ggml-metal-device.m on the GNU runtime: a
 * paravirtual guest device (_MTLDevice with initGPUFamilySupport, AppleParavirtDevice below it)
 * and inert queues, libraries, pipelines, buffers and residency sets. Test rig only: no kernel
 * is compiled or run. Never: decides anything vzcaps decides. */
#import <Metal/Metal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* STANDIN_EXTRA_FAMILY=N makes the device also claim family N: the negative test's way of
 * making the stand-in answer what the prediction does not expect. */
static long extra_family(void)
{
    const char *s = getenv("STANDIN_EXTRA_FAMILY");
    return s ? strtol(s, NULL, 10) : 0;
}

@interface StandinObject : NSObject
@end
@implementation StandinObject
@end

@interface StandinBuffer : StandinObject <MTLBuffer> {
    void *bytes;
    NSUInteger len;
    BOOL owned;
}
- (id)initWithBytes:(void *)p length:(NSUInteger)n owned:(BOOL)o;
@end
@implementation StandinBuffer
- (id)initWithBytes:(void *)p length:(NSUInteger)n owned:(BOOL)o
{
    if ((self = [super init])) {
        bytes = p;
        len = n;
        owned = o;
    }
    return self;
}
- (void)dealloc
{
    if (owned)
        free(bytes);
    [super dealloc];
}
- (void *)contents { return bytes; }
- (NSUInteger)length { return len; }
@end

@interface StandinEncoder : StandinObject <MTLComputeCommandEncoder, MTLBlitCommandEncoder>
@end
@implementation StandinEncoder
- (void)endEncoding {}
- (void)pushDebugGroup:(NSString *)string { (void)string; }
- (void)popDebugGroup {}
- (void)setComputePipelineState:(id<MTLComputePipelineState>)state { (void)state; }
- (void)setBytes:(const void *)b length:(NSUInteger)n atIndex:(NSUInteger)i { (void)b; (void)n; (void)i; }
- (void)setBuffer:(id<MTLBuffer>)b offset:(NSUInteger)o atIndex:(NSUInteger)i { (void)b; (void)o; (void)i; }
- (void)setThreadgroupMemoryLength:(NSUInteger)n atIndex:(NSUInteger)i { (void)n; (void)i; }
- (void)dispatchThreadgroups:(MTLSize)g threadsPerThreadgroup:(MTLSize)t { (void)g; (void)t; }
- (void)memoryBarrierWithScope:(MTLBarrierScope)scope { (void)scope; }
- (void)fillBuffer:(id<MTLBuffer>)buffer range:(NSRange)range value:(uint8_t)value
{
    memset((char *)[buffer contents] + range.location, value, range.length);
}
- (void)copyFromBuffer:(id<MTLBuffer>)src sourceOffset:(NSUInteger)so toBuffer:(id<MTLBuffer>)dst
     destinationOffset:(NSUInteger)dO size:(NSUInteger)size
{
    memmove((char *)[dst contents] + dO, (char *)[src contents] + so, size);
}
@end

@interface StandinCommandBuffer : StandinObject <MTLCommandBuffer> {
    MTLCommandBufferHandler handler;
}
@end
@implementation StandinCommandBuffer
- (id<MTLComputeCommandEncoder>)computeCommandEncoder { return [[StandinEncoder new] autorelease]; }
- (id<MTLComputeCommandEncoder>)computeCommandEncoderWithDispatchType:(MTLDispatchType)type
{
    (void)type;
    return [self computeCommandEncoder];
}
- (id<MTLBlitCommandEncoder>)blitCommandEncoder { return [[StandinEncoder new] autorelease]; }
- (void)encodeSignalEvent:(id<MTLSharedEvent>)event value:(uint64_t)value { (void)event; (void)value; }
- (void)encodeWaitForEvent:(id<MTLSharedEvent>)event value:(uint64_t)value { (void)event; (void)value; }
- (void)addCompletedHandler:(MTLCommandBufferHandler)block { handler = Block_copy(block); }
- (void)commit
{
    if (handler) { /* the work is done at once: the handler runs at commit */
        handler(self);
        Block_release(handler);
        handler = NULL;
    }
}
- (void)waitUntilCompleted {}
@end

@interface StandinQueue : StandinObject <MTLCommandQueue>
@end
@implementation StandinQueue
- (id<MTLCommandBuffer>)commandBuffer { return [[StandinCommandBuffer new] autorelease]; }
- (id<MTLCommandBuffer>)commandBufferWithUnretainedReferences { return [self commandBuffer]; }
@end

@interface StandinFunction : StandinObject <MTLFunction>
@end
@implementation StandinFunction
@end

@interface StandinPipeline : StandinObject <MTLComputePipelineState>
@end
@implementation StandinPipeline
- (NSUInteger)maxTotalThreadsPerThreadgroup { return 1024; }
- (NSUInteger)threadExecutionWidth { return 32; }
@end

@interface StandinLibrary : StandinObject <MTLLibrary>
@end
@implementation StandinLibrary
- (id<MTLFunction>)newFunctionWithName:(NSString *)name
{
    (void)name;
    return [StandinFunction new];
}
- (id<MTLFunction>)newFunctionWithName:(NSString *)name constantValues:(MTLFunctionConstantValues *)values
                                 error:(NSError **)error
{
    (void)values;
    (void)error;
    return [self newFunctionWithName:name];
}
- (NSArray *)functionNames { return [NSArray array]; }
@end

@interface StandinEvent : StandinObject <MTLSharedEvent>
@end
@implementation StandinEvent
- (BOOL)waitUntilSignaledValue:(uint64_t)value timeoutMS:(uint64_t)ms
{
    (void)value;
    (void)ms;
    return YES;
}
@end

@interface StandinResidencySet : StandinObject <MTLResidencySet>
@end
@implementation StandinResidencySet
- (void)addAllocation:(id<MTLAllocation>)allocation { (void)allocation; }
- (void)removeAllAllocations {}
- (void)commit {}
- (void)requestResidency {}
- (void)endResidency {}
@end

@implementation MTLFunctionConstantValues
- (void)setConstantValue:(const void *)value type:(MTLDataType)type atIndex:(NSUInteger)index
{
    (void)value;
    (void)type;
    (void)index;
}
@end

@implementation MTLCompileOptions
@synthesize preprocessorMacros = preprocessorMacros_, languageVersion = languageVersion_;
@end

@implementation MTLResidencySetDescriptor
@synthesize label = label_, initialCapacity = initialCapacity_;
@end

/* The private class every device on macOS derives from, shaped as in tests/rig/fakemetal.m:
 * initGPUFamilySupport builds the state supportsFamily: answers from. */
@interface _MTLDevice : NSObject <MTLDevice> {
    BOOL familyReady;
}
- (void)initGPUFamilySupport;
@end
@implementation _MTLDevice
- (id)init
{
    if ((self = [super init]))
        [self initGPUFamilySupport];
    return self;
}
- (void)initGPUFamilySupport { familyReady = YES; }
/* A paravirtual guest's stock answers (METAL-FACTS): Apple1-5, Mac2, Common1-3, no Metal3. */
- (BOOL)supportsFamily:(MTLGPUFamily)family
{
    if (!familyReady)
        return NO;
    if (family == extra_family())
        return YES;
    return (family >= 1001 && family <= 1005) || family == 2002 || (family >= 3001 && family <= 3003);
}
- (NSString *)name { return @"Apple Paravirtual device"; }
- (BOOL)hasUnifiedMemory { return YES; }
- (NSUInteger)maxBufferLength { return 1ul << 32; }
- (NSUInteger)maxThreadgroupMemoryLength { return 32768; }
- (uint64_t)recommendedMaxWorkingSetSize { return 5010800640ull; }
- (NSUInteger)currentAllocatedSize { return 0; }
- (MTLDeviceLocation)location { return MTLDeviceLocationBuiltIn; }
- (id<MTLCommandQueue>)newCommandQueue { return [StandinQueue new]; }
- (id<MTLLibrary>)newLibraryWithSource:(NSString *)source options:(MTLCompileOptions *)options
                                 error:(NSError **)error
{
    (void)source;
    (void)options;
    (void)error;
    return [StandinLibrary new];
}
- (id<MTLLibrary>)newLibraryWithURL:(NSURL *)url error:(NSError **)error
{
    (void)url;
    (void)error;
    return [StandinLibrary new];
}
- (id<MTLComputePipelineState>)newComputePipelineStateWithFunction:(id<MTLFunction>)function
                                                             error:(NSError **)error
{
    (void)function;
    (void)error;
    return [StandinPipeline new];
}
- (id<MTLBuffer>)newBufferWithLength:(NSUInteger)length options:(MTLResourceOptions)options
{
    (void)options;
    return [[StandinBuffer alloc] initWithBytes:calloc(1, length ? length : 1) length:length owned:YES];
}
- (id<MTLBuffer>)newBufferWithBytesNoCopy:(void *)pointer length:(NSUInteger)length
                                  options:(MTLResourceOptions)options
                              deallocator:(void (^)(void *pointer, NSUInteger length))deallocator
{
    (void)options;
    (void)deallocator;
    return [[StandinBuffer alloc] initWithBytes:pointer length:length owned:NO];
}
- (id<MTLSharedEvent>)newSharedEvent { return [StandinEvent new]; }
- (id<MTLResidencySet>)newResidencySetWithDescriptor:(MTLResidencySetDescriptor *)desc error:(NSError **)error
{
    (void)desc;
    (void)error;
    return [StandinResidencySet new];
}
@end

@interface AppleParavirtDevice : _MTLDevice
@end
@implementation AppleParavirtDevice
@end

id<MTLDevice> MTLCreateSystemDefaultDevice(void)
{
    return [[AppleParavirtDevice alloc] init];
}

/* Mach's memory calls (declared in include/apple-prefix.h), over mmap. */
vm_map_t mach_task_self(void) { return 1; }
kern_return_t vm_allocate(vm_map_t task, vm_address_t *address, vm_size_t size, int flags)
{
    (void)task;
    (void)flags;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 3; /* KERN_NO_SPACE */
    *address = (vm_address_t)p;
    return KERN_SUCCESS;
}
kern_return_t vm_deallocate(vm_map_t task, vm_address_t address, vm_size_t size)
{
    (void)task;
    return munmap((void *)address, size) == 0 ? KERN_SUCCESS : 4;
}
