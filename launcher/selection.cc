#include "launcher/selection.h"
