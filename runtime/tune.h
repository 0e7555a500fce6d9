/* The autotuner moved to tune/ (a floor above runtime/: it drives the harness, the
 * harness does not know it).  This header only forwards, for files that still name
 * the old place; new code includes "tune/tune.h". */
#include "../tune/tune.h"
