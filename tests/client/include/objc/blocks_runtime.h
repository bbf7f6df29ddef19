/* GNUstep's headers include <objc/blocks_runtime.h> when the compiler has blocks; gcc's
 * runtime has none, and Debian's BlocksRuntime provides the same API as <Block.h>. */
#include <Block.h>
