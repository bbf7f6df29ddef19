/* Stand-in Metal declarations for compiling llama.cpp's ggml-metal-device.m on Linux: the
 * names, types and selectors that file uses, with Apple's spellings and values. Test rig only;
 * it never claims what Apple's Metal does beyond the declarations. */
#ifndef VZCAPS_STANDIN_METAL_H
#define VZCAPS_STANDIN_METAL_H
#import <Foundation/Foundation.h>

typedef NS_ENUM(NSInteger, MTLGPUFamily) {
    MTLGPUFamilyApple1 = 1001, MTLGPUFamilyApple2 = 1002, MTLGPUFamilyApple3 = 1003,
    MTLGPUFamilyApple4 = 1004, MTLGPUFamilyApple5 = 1005, MTLGPUFamilyApple6 = 1006,
    MTLGPUFamilyApple7 = 1007, MTLGPUFamilyApple8 = 1008, MTLGPUFamilyApple9 = 1009,
    MTLGPUFamilyMac1 = 2001, MTLGPUFamilyMac2 = 2002,
    MTLGPUFamilyCommon1 = 3001, MTLGPUFamilyCommon2 = 3002, MTLGPUFamilyCommon3 = 3003,
    MTLGPUFamilyMetal3 = 5001,
};
typedef NS_ENUM(NSUInteger, MTLLanguageVersion) {
    MTLLanguageVersion2_4 = (2 << 16) + 4, MTLLanguageVersion3_0 = 3 << 16,
};
typedef NS_ENUM(NSUInteger, MTLDataType) {
    MTLDataTypeInt = 29, MTLDataTypeShort = 37, MTLDataTypeBool = 53,
};
typedef NS_ENUM(NSUInteger, MTLDispatchType) { MTLDispatchTypeSerial = 0, MTLDispatchTypeConcurrent = 1 };
typedef NS_OPTIONS(NSUInteger, MTLBarrierScope) { MTLBarrierScopeBuffers = 1 << 0 };
typedef NS_ENUM(NSUInteger, MTLDeviceLocation) { MTLDeviceLocationBuiltIn = 0, MTLDeviceLocationExternal = 2 };
typedef NS_OPTIONS(NSUInteger, MTLResourceOptions) {
    MTLResourceStorageModeShared = 0 << 4, MTLResourceStorageModePrivate = 2 << 4,
};
typedef struct { NSUInteger width, height, depth; } MTLSize;
static inline MTLSize MTLSizeMake(NSUInteger w, NSUInteger h, NSUInteger d)
{
    MTLSize s = {w, h, d};
    return s;
}

@protocol MTLDevice, MTLCommandBuffer, MTLFunction;

@protocol MTLResource <NSObject>
@end
@protocol MTLAllocation <NSObject>
@end
@protocol MTLBuffer <MTLResource, MTLAllocation>
@property (readonly) NSUInteger length;
- (void *)contents;
@end
@protocol MTLSharedEvent <NSObject>
- (BOOL)waitUntilSignaledValue:(uint64_t)value timeoutMS:(uint64_t)milliseconds;
@end
@protocol MTLCommandEncoder <NSObject>
- (void)endEncoding;
- (void)pushDebugGroup:(NSString *)string;
- (void)popDebugGroup;
@end
@protocol MTLComputePipelineState <NSObject>
@property (readonly) NSUInteger maxTotalThreadsPerThreadgroup;
@property (readonly) NSUInteger threadExecutionWidth;
@end
@protocol MTLComputeCommandEncoder <MTLCommandEncoder>
- (void)setComputePipelineState:(id<MTLComputePipelineState>)state;
- (void)setBytes:(const void *)bytes length:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)setBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset atIndex:(NSUInteger)index;
- (void)setThreadgroupMemoryLength:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)dispatchThreadgroups:(MTLSize)threadgroups threadsPerThreadgroup:(MTLSize)threads;
- (void)memoryBarrierWithScope:(MTLBarrierScope)scope;
@end
@protocol MTLBlitCommandEncoder <MTLCommandEncoder>
- (void)fillBuffer:(id<MTLBuffer>)buffer range:(NSRange)range value:(uint8_t)value;
- (void)copyFromBuffer:(id<MTLBuffer>)src sourceOffset:(NSUInteger)srcOffset toBuffer:(id<MTLBuffer>)dst
     destinationOffset:(NSUInteger)dstOffset size:(NSUInteger)size;
@end
typedef void (^MTLCommandBufferHandler)(id<MTLCommandBuffer>);
@protocol MTLCommandBuffer <NSObject>
- (id<MTLComputeCommandEncoder>)computeCommandEncoder;
- (id<MTLComputeCommandEncoder>)computeCommandEncoderWithDispatchType:(MTLDispatchType)type;
- (id<MTLBlitCommandEncoder>)blitCommandEncoder;
- (void)encodeSignalEvent:(id<MTLSharedEvent>)event value:(uint64_t)value;
- (void)encodeWaitForEvent:(id<MTLSharedEvent>)event value:(uint64_t)value;
- (void)addCompletedHandler:(MTLCommandBufferHandler)block;
- (void)commit;
- (void)waitUntilCompleted;
@end
@protocol MTLCommandQueue <NSObject>
- (id<MTLCommandBuffer>)commandBuffer;
- (id<MTLCommandBuffer>)commandBufferWithUnretainedReferences;
@end

@interface MTLFunctionConstantValues : NSObject
- (void)setConstantValue:(const void *)value type:(MTLDataType)type atIndex:(NSUInteger)index;
@end
/* The classes carry their instance variables here: the stand-in is built for the GNU runtime's
 * fragile ABI, where a class's ivars must be declared in its @interface. */
@interface MTLCompileOptions : NSObject {
    NSDictionary *preprocessorMacros_;
    MTLLanguageVersion languageVersion_;
}
@property (copy) NSDictionary *preprocessorMacros;
@property MTLLanguageVersion languageVersion;
@end
@protocol MTLFunction <NSObject>
@end
@protocol MTLLibrary <NSObject>
- (id<MTLFunction>)newFunctionWithName:(NSString *)name;
- (id<MTLFunction>)newFunctionWithName:(NSString *)name constantValues:(MTLFunctionConstantValues *)values
                                 error:(NSError **)error;
@property (readonly) NSArray *functionNames;
@end
@interface MTLResidencySetDescriptor : NSObject {
    NSString *label_;
    NSUInteger initialCapacity_;
}
@property (copy) NSString *label;
@property NSUInteger initialCapacity;
@end
@protocol MTLResidencySet <NSObject>
- (void)addAllocation:(id<MTLAllocation>)allocation;
- (void)removeAllAllocations;
- (void)commit;
- (void)requestResidency;
- (void)endResidency;
@end

@protocol MTLDevice <NSObject>
@property (readonly) NSString *name;
@property (readonly) BOOL hasUnifiedMemory;
@property (readonly) NSUInteger maxBufferLength;
@property (readonly) NSUInteger maxThreadgroupMemoryLength;
@property (readonly) uint64_t recommendedMaxWorkingSetSize;
@property (readonly) NSUInteger currentAllocatedSize;
@property (readonly) MTLDeviceLocation location;
- (BOOL)supportsFamily:(MTLGPUFamily)family;
- (id<MTLCommandQueue>)newCommandQueue;
- (id<MTLLibrary>)newLibraryWithSource:(NSString *)source options:(MTLCompileOptions *)options
                                 error:(NSError **)error;
- (id<MTLLibrary>)newLibraryWithURL:(NSURL *)url error:(NSError **)error;
- (id<MTLComputePipelineState>)newComputePipelineStateWithFunction:(id<MTLFunction>)function
                                                             error:(NSError **)error;
- (id<MTLBuffer>)newBufferWithLength:(NSUInteger)length options:(MTLResourceOptions)options;
- (id<MTLBuffer>)newBufferWithBytesNoCopy:(void *)pointer length:(NSUInteger)length
                                  options:(MTLResourceOptions)options
                              deallocator:(void (^)(void *pointer, NSUInteger length))deallocator;
- (id<MTLSharedEvent>)newSharedEvent;
- (id<MTLResidencySet>)newResidencySetWithDescriptor:(MTLResidencySetDescriptor *)desc error:(NSError **)error;
@end

#ifdef __cplusplus
extern "C" {
#endif
id<MTLDevice> MTLCreateSystemDefaultDevice(void);
#ifdef __cplusplus
}
#endif
#endif
