#include "launcher/hostfile.h"
